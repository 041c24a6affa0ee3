#!/bin/sh
# aicr-pytest snapshot agent: print what this node shows, in sections, on stdout.
#
# It runs in a stock image (any image with a POSIX /bin/sh and `find`; the default is the CUDA
# image check-nvidia-smi uses), delivered in a run-scoped ConfigMap, and never writes anything.
# aicr_pytest.snapshot.sections reads the output back; every content line is prefixed with "|", so
# no file content can be taken for a marker:
#
#   ==AICR== begin 1 node=<NODE_NAME> privileged=<true|false>
#   ==AICR== section <name>
#   |<a line of the section command's stdout and stderr>
#   ==AICR== end <name> rc=<the command's exit status>
#   ==AICR== section sysctl            (one item per file under /proc/sys, except net/ and dev/cdrom/)
#   ==AICR== item /proc/sys/<path>
#   |<a line of the file>
#   ==AICR== status <0 read, 1 unreadable>
#   ==AICR== end sysctl rc=0
#   ==AICR== done
#
# The network section needs readlink and, for a NIC's VPD, od and tr (all in coreutils and busybox).
#
# Environment: NODE_NAME (downward API), AICR_PRIVILEGED (true: host namespaces and the host's
# /etc/os-release mounted at /host/etc/os-release), AICR_SYSTEMD_UNITS (units to show).
# For tests only: AICR_ROOT (prefix of /proc, /sys and /host), AICR_HOST_EXEC (how a host binary
# runs; default: in the mount namespace of the host's PID 1).
set -u
R=${AICR_ROOT:-}
PRIV=${AICR_PRIVILEGED:-false}
HX=${AICR_HOST_EXEC-nsenter --target 1 --mount --}
UNITS=${AICR_SYSTEMD_UNITS:-containerd.service docker.service kubelet.service}
NL='
'
exec 4>&1

# Prefix every line of stdin with "|" (a last line without a newline too).
pfx() {
  while IFS= read -r l || [ -n "$l" ]; do printf '|%s\n' "$l"; done
}

# emit NAME COMMAND...: one section with the command's output and exit status.
emit() {
  name=$1
  shift
  echo "==AICR== section $name"
  rc=$( { { "$@" 2>&1; echo "$?" >&3; } | pfx >&4; } 3>&1 )
  echo "==AICR== end $name rc=${rc:-255}"
}

os_release() {
  for f in "$R/host/etc/os-release" "$R/host/usr/lib/os-release"; do
    if [ -r "$f" ]; then
      cat "$f"
      return
    fi
  done
  echo "the host's os-release is not mounted at /host/etc/os-release"
  return 2
}

pci_devices() {
  found=0
  for d in "$R"/sys/bus/pci/devices/*; do
    [ -r "$d/vendor" ] || continue
    v=
    dev=
    cls=
    read -r v < "$d/vendor"
    read -r dev < "$d/device"
    read -r cls < "$d/class"
    echo "${d##*/} $v $dev $cls"
    found=1
  done
  if [ "$found" != 1 ]; then
    echo "no PCI devices under /sys/bus/pci/devices"
    return 2
  fi
}

# attr KEY FILE: "KEY <first line of FILE>" when FILE can be read (a last line without newline too).
attr() {
  [ -r "$2" ] || return 0
  x=
  { IFS= read -r x || [ -n "$x" ]; } < "$2" 2>/dev/null && echo "$1 $x"
  return 0
}

# NVIDIA (Mellanox) network PFs and NVIDIA GPUs: "pf <address>" or "gpu <address>", then one
# "key value" line per fact (virtual functions, which have a physfn link, are skipped).
net_pci() {
  if [ ! -d "$R/sys/bus/pci/devices" ]; then
    echo "no /sys/bus/pci/devices"
    return 2
  fi
  base=
  [ -n "$R" ] && base=$(readlink -f "$R")
  for d in "$R"/sys/bus/pci/devices/*; do
    [ -r "$d/vendor" ] && [ -r "$d/class" ] || continue
    v=
    cls=
    read -r v < "$d/vendor"
    read -r cls < "$d/class"
    case "$v:$cls" in
      0x15b3:0x0200* | 0x15b3:0x0207*) kind=pf ;;
      0x10de:0x0300* | 0x10de:0x0302*) kind=gpu ;;
      *) continue ;;
    esac
    [ -e "$d/physfn" ] && continue
    echo "$kind ${d##*/}"
    p=$(readlink -f "$d" 2>/dev/null) && echo "path ${p#"$base"}"
    attr numa "$d/numa_node"
    [ "$kind" = pf ] || continue
    attr device "$d/device"
    attr sriov_totalvfs "$d/sriov_totalvfs"
    for n in "$d"/net/*; do
      [ -e "$n" ] && echo "net ${n##*/}"
    done
    for r in "$d"/infiniband/*; do
      [ -e "$r" ] || continue
      echo "rdma ${r##*/}"
      attr psid "$r/board_id"
      for l in "$r"/ports/*/link_layer; do
        attr link_layer "$l"
      done
    done
    if [ -r "$d/vpd" ]; then
      x=$(od -An -v -tx1 "$d/vpd" 2>/dev/null | tr -d ' \n')
      [ -n "$x" ] && echo "vpd $x"
    fi
  done
  attr product "$R/sys/class/dmi/id/product_name"
  return 0
}

nvidia_smi() {
  if [ "$PRIV" = true ]; then
    # The host's nvidia-smi sees every GPU; a driver container keeps it under /run/nvidia/driver.
    if out=$($HX nvidia-smi -q -x 2>&1); then
      printf '%s\n' "$out"
      return 0
    fi
    if out=$($HX chroot /run/nvidia/driver nvidia-smi -q -x 2>&1); then
      printf '%s\n' "$out"
      return 0
    fi
  fi
  # In the container only when the runtime injected it (a GPU allocated to the pod).
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -q -x
    return
  fi
  echo "nvidia-smi is not available on the host or in the container"
  return 127
}

# systemctl show for one unit, without properties that can carry secrets (they never leave the node).
unit_show() {
  out=$($HX systemctl show --all --no-pager "$1" 2>&1)
  rc=$?
  printf '%s\n' "$out" | while IFS= read -r l || [ -n "$l" ]; do
    case ${l%%=*} in
      Environment | *Credential*) ;;
      *) printf '%s\n' "$l" ;;
    esac
  done
  return $rc
}

sysctl_files() {
  find "$R/proc/sys" -path "$R/proc/sys/net" -prune -o -type f -print 2>/dev/null |
    while IFS= read -r f; do
      rel=${f#"$R"}
      case "$rel" in /proc/sys/dev/cdrom/*) continue ;; esac
      echo "==AICR== item $rel"
      # One read(2) of the whole file: procfs answers a read at a non-zero offset with EOF.
      if [ -r "$f" ] && out=$(cat "$f" 2>/dev/null); then
        case $out in
          *"$NL"*) printf '%s\n' "$out" | pfx ;;
          *) printf '|%s\n' "$out" ;;
        esac
        echo "==AICR== status 0"
      else
        echo "==AICR== status 1"
      fi
    done
}

echo "==AICR== begin 1 node=${NODE_NAME:-} privileged=$PRIV"
emit os-release os_release
emit cmdline cat "$R/proc/cmdline"
emit modules cat "$R/proc/modules"
emit pci pci_devices
emit network net_pci
emit nvidia-smi nvidia_smi
if [ "$PRIV" = true ]; then
  for u in $UNITS; do
    emit "systemd:$u" unit_show "$u"
  done
fi
echo "==AICR== section sysctl"
sysctl_files
echo "==AICR== end sysctl rc=0"
echo "==AICR== done"
