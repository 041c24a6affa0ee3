//go:build tools

// Package tools records the commands the integration-test control plane builds, so `go mod tidy` keeps their
// dependencies in go.mod/go.sum. It is never compiled (the `tools` build tag is never set).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
