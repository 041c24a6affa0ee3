// referrers-registry: an in-memory OCI registry for aicr-pytest's evidence tests, built on
// go-containerregistry's pkg/registry with its OCI 1.1 Referrers API switched on.
//
// pkg/registry (v0.21.9) serves GET /v2/<name>/referrers/<digest>, but two details differ from the
// OCI distribution-spec 1.1 text, and this program corrects exactly those two, nothing else:
//
//   - a manifest PUT that carries a `subject` is answered without the `OCI-Subject` header, so a
//     client cannot tell that the registry indexes referrers (spec: "MUST set OCI-Subject");
//   - each descriptor of the referrers list reports the manifest's config.mediaType as
//     `artifactType` even when the manifest has its own `artifactType`, omits the manifest's
//     annotations and ignores the `artifactType` query filter.
//
// Usage: referrers-registry [-addr 127.0.0.1:0]
// Prints "listening on http://HOST:PORT" on stdout once it accepts connections; exits on SIGTERM.
// It only ever listens on a loopback address.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

const maxManifest = 4 << 20

type shim struct{ inner http.Handler }

func (s shim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPut && len(parts) >= 4 && parts[len(parts)-2] == "manifests":
		s.putManifest(w, r)
	case r.Method == http.MethodGet && len(parts) >= 4 && parts[len(parts)-2] == "referrers":
		s.referrers(w, r, strings.Join(parts[1:len(parts)-2], "/"))
	default:
		s.inner.ServeHTTP(w, r)
	}
}

func (s shim) putManifest(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxManifest+1))
	if err != nil || len(body) > maxManifest {
		http.Error(w, "manifest too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, r)
	var m struct {
		Subject *struct {
			Digest string `json:"digest"`
		} `json:"subject"`
	}
	if rec.Code == http.StatusCreated && json.Unmarshal(body, &m) == nil && m.Subject != nil && m.Subject.Digest != "" {
		rec.Header().Set("OCI-Subject", m.Subject.Digest)
	}
	copyResponse(w, rec)
}

func (s shim) referrers(w http.ResponseWriter, r *http.Request, repo string) {
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		copyResponse(w, rec)
		return
	}
	var index map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		copyResponse(w, rec)
		return
	}
	want := r.URL.Query().Get("artifactType")
	descs, _ := index["manifests"].([]any)
	kept := []any{}
	for _, d := range descs {
		desc, ok := d.(map[string]any)
		if !ok {
			continue
		}
		digest, _ := desc["digest"].(string)
		if m := s.manifest(r.Context(), repo, digest); m != nil {
			if at, _ := m["artifactType"].(string); at != "" {
				desc["artifactType"] = at
			}
			if ann, ok := m["annotations"].(map[string]any); ok && len(ann) > 0 {
				desc["annotations"] = ann
			}
		}
		if want != "" && desc["artifactType"] != want {
			continue
		}
		kept = append(kept, desc)
	}
	index["manifests"] = kept
	out, _ := json.Marshal(index)
	w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
	w.Header().Set("Content-Length", fmt.Sprint(len(out)))
	if want != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

func (s shim) manifest(ctx context.Context, repo, digest string) map[string]any {
	req := httptest.NewRequest(http.MethodGet, "/v2/"+repo+"/manifests/"+digest, nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(rec.Body.Bytes(), &m) != nil {
		return nil
	}
	return m
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(os.Stderr, "referrers-registry: -addr must be a loopback IP:port, got %q\n", *addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "referrers-registry: %v\n", err)
		os.Exit(1)
	}
	quiet := log.New(io.Discard, "", 0)
	srv := &http.Server{
		Handler:           shim{inner: registry.New(registry.WithReferrersSupport(true), registry.Logger(quiet))},
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "referrers-registry: %v\n", err)
		os.Exit(1)
	}
}
