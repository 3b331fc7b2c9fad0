package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/testkit"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"gopkg.in/yaml.v3"
)

// TestDockerfileMatchesBuilder reads the Dockerfile's final stage: it must
// state what the daemonless builder puts in the image (user, entrypoint,
// cmd, ports, label keys, file paths), so that both give the same image.
func TestDockerfileMatchesBuilder(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := strings.Split(string(b), "\nFROM ")
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final, "scratch") {
		t.Errorf("final stage is FROM %.20s, want scratch (a static binary and its files only)", final)
	}
	directive := func(name string) []string {
		var out []string
		sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(final, "\\\n", " ")))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), name+" "); ok {
				out = append(out, strings.TrimSpace(rest))
			}
		}
		return out
	}
	jsonList := func(s string) []string {
		var l []string
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Errorf("%q: %v", s, err)
		}
		return l
	}
	if got := directive("USER"); !slices.Equal(got, []string{user}) {
		t.Errorf("USER = %q, want %s", got, user)
	}
	if got := directive("ENTRYPOINT"); len(got) != 1 || !slices.Equal(jsonList(got[0]), entrypoint) {
		t.Errorf("ENTRYPOINT = %q, want %q", got, entrypoint)
	}
	if got := directive("CMD"); len(got) != 1 || !slices.Equal(jsonList(got[0]), cmd) {
		t.Errorf("CMD = %q, want %q", got, cmd)
	}
	var ports []string
	for _, e := range directive("EXPOSE") {
		for _, p := range strings.Fields(e) {
			ports = append(ports, p+"/tcp")
		}
	}
	if !slices.Equal(ports, exposedPorts) {
		t.Errorf("EXPOSE = %q, want %q", ports, exposedPorts)
	}
	var copied []string
	for _, c := range directive("COPY") {
		f := strings.Fields(c)
		copied = append(copied, f[len(f)-1])
	}
	slices.Sort(copied)
	if want := []string{caPath, configPath, binaryPath}; !slices.Equal(copied, slices.Sorted(slices.Values(want))) {
		t.Errorf("COPY destinations = %q, want %q", copied, want)
	}
	labelLine := strings.Join(directive("LABEL"), " ")
	for k := range labels(options{}) {
		if !strings.Contains(labelLine, k+"=") {
			t.Errorf("Dockerfile LABEL lacks %s", k)
		}
	}
}

// TestImage reads back the image that deploy/image/build.sh wrote to
// $EVALBRIDGE_IMAGE_TAR (.ci/deploy-check.sh builds it): the OCI layout, the
// config, the files, and the binary from the layer answering its health
// check on the image's own default config.
func TestImage(t *testing.T) {
	tarPath := os.Getenv("EVALBRIDGE_IMAGE_TAR")
	if tarPath == "" {
		t.Skip("EVALBRIDGE_IMAGE_TAR is not set: .ci/deploy-check.sh builds the image with deploy/image/build.sh and runs this test on it")
	}
	wantVersion := os.Getenv("EVALBRIDGE_IMAGE_VERSION")
	dir := t.TempDir()
	untar(t, tarPath, dir)

	// The layout: oci-layout, index.json, blobs/.
	var ociLayout struct {
		Version string `json:"imageLayoutVersion"`
	}
	readJSON(t, filepath.Join(dir, "oci-layout"), &ociLayout)
	if ociLayout.Version != "1.0.0" {
		t.Errorf("oci-layout imageLayoutVersion = %q, want 1.0.0", ociLayout.Version)
	}
	if st, err := os.Stat(filepath.Join(dir, "blobs", "sha256")); err != nil || !st.IsDir() {
		t.Fatalf("no blobs/sha256 directory: %v", err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIManifestSchema1 {
		t.Fatalf("index.json manifests = %+v, want one OCI image manifest", im.Manifests)
	}
	if wantVersion != "" && im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != wantVersion {
		t.Errorf("ref.name = %q, want %q", im.Manifests[0].Annotations["org.opencontainers.image.ref.name"], wantVersion)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(0)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		size += s
	}

	// The config.
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || c.User != "10001" ||
		!slices.Equal(c.Entrypoint, []string{"/otelcol-evalbridge"}) ||
		!slices.Equal(c.Cmd, []string{"--config=/etc/otelcol-evalbridge/config.yaml"}) {
		t.Errorf("config: os %q user %q entrypoint %q cmd %q", cf.OS, c.User, c.Entrypoint, c.Cmd)
	}
	if got := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(got, []string{"13133/tcp", "4317/tcp", "4318/tcp", "8888/tcp", "8889/tcp"}) {
		t.Errorf("exposed ports = %q", got)
	}
	if wantVersion != "" && c.Labels["org.opencontainers.image.version"] != wantVersion {
		t.Errorf("label version = %q, want %q", c.Labels["org.opencontainers.image.version"], wantVersion)
	}
	if !strings.HasPrefix(c.Labels["org.opencontainers.image.source"], "https://") || c.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("labels = %v", c.Labels)
	}

	// The files, from the flattened layers.
	files := extract(t, img, dir)
	var list []string
	for name, mode := range files {
		st, err := os.Stat(filepath.Join(dir, "rootfs", name))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, fmt.Sprintf("/%s (mode %o, %d bytes)", name, mode, st.Size()))
	}
	slices.Sort(list)
	t.Logf("image %s: %d layer(s), %d bytes compressed; config: user %s entrypoint %q cmd %q ports %q labels %v; files: %s",
		im.Manifests[0].Digest, len(layers), size, c.User, c.Entrypoint, c.Cmd, slices.Sorted(maps.Keys(c.ExposedPorts)), c.Labels, strings.Join(list, ", "))
	for name, mode := range map[string]int64{"otelcol-evalbridge": 0o755, "etc/ssl/certs/ca-certificates.crt": 0o644, "etc/otelcol-evalbridge/config.yaml": 0o644} {
		if got, ok := files[name]; !ok || got != mode {
			t.Errorf("/%s: present %v mode %o, want mode %o", name, ok, got, mode)
		}
	}
	root := filepath.Join(dir, "rootfs")
	pem, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) || strings.Count(string(pem), "BEGIN CERTIFICATE") < 10 {
		t.Errorf("the CA bundle holds %d certificates, want a system bundle", strings.Count(string(pem), "BEGIN CERTIFICATE"))
	}
	cfgInImage, err := os.ReadFile(filepath.Join(root, "etc/otelcol-evalbridge/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile("config.yaml"); !bytes.Equal(cfgInImage, want) {
		t.Error("/etc/otelcol-evalbridge/config.yaml differs from deploy/image/config.yaml")
	}
	bin := filepath.Join(root, "otelcol-evalbridge")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: not static (CGO_ENABLED=0)")
		}
	}
	ef.Close()

	// The binary runs: --version, then the image's own command.
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || (wantVersion != "" && !strings.Contains(string(out), wantVersion)) {
		t.Errorf("%s --version: %v %s (want %q)", bin, err, out, wantVersion)
	}
	runImageCommand(t, bin, root, c.Cmd, cfgInImage)
}

// runImageCommand starts the binary with the image's CMD (its config path
// mapped into the extracted root filesystem). The config listens on
// 0.0.0.0:4317, 4318, 13133 (and any other 0.0.0.0 endpoint it names): on a
// shared CI machine those ports may be taken, and a test must not listen on
// every interface, so a second --config (yaml:, merged over the image's by
// the collector's resolver) moves each of them to a free loopback port. The
// image's file is used unchanged.
func runImageCommand(t *testing.T, bin, root string, imageCmd []string, cfg []byte) {
	var args []string
	for _, a := range imageCmd {
		if p, ok := strings.CutPrefix(a, "--config="); ok && strings.HasPrefix(p, "/") {
			a = "--config=" + filepath.Join(root, p)
		}
		args = append(args, a)
	}
	var conf map[string]any
	if err := yaml.Unmarshal(cfg, &conf); err != nil {
		t.Fatal(err)
	}
	moved := testkit.MoveListeners(t, conf)
	healthAddr := moved.Addr("extensions::health_check::endpoint")
	if healthAddr == "" || moved.Moved["extensions::health_check::endpoint"][0] != "0.0.0.0:13133" {
		t.Fatal("the image's config has no extensions::health_check::endpoint on 0.0.0.0:13133")
	}
	// The collector's own telemetry is for Prometheus outside the pod too.
	if moved.TelemetryWas != "0.0.0.0:8888" {
		t.Errorf("the image's config has its telemetry reader on %q, want 0.0.0.0:8888", moved.TelemetryWas)
	}
	for key, m := range moved.Moved {
		if !strings.HasPrefix(m[0], "0.0.0.0:") {
			t.Errorf("%s: %s, want 0.0.0.0 (a container listens for the pod's traffic)", key, m[0])
		}
	}
	for _, o := range moved.Overrides {
		args = append(args, "--config=yaml:"+o)
	}
	t.Logf("starting %s %q", bin, args)

	var logs bytes.Buffer
	c := exec.Command(bin, args...)
	c.Stdout, c.Stderr = &logs, &logs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	defer func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the collector exited with %v after SIGTERM", err)
			}
		case <-time.After(30 * time.Second):
			_ = c.Process.Kill()
			<-exited
			t.Error("the collector did not stop within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("collector output:\n%s", logs.String())
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthAddr+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("health_check %s: %d %s", healthAddr, resp.StatusCode, bytes.TrimSpace(body))
				return
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the collector exited before its health check answered: %v", err)
		case <-ctx.Done():
			t.Fatalf("health_check on %s did not answer 200 within 60s (last error %v)", healthAddr, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// extract writes the image's flattened filesystem under dir/rootfs and
// returns its regular files with their modes.
func extract(t *testing.T, img v1.Image, dir string) map[string]int64 {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")
		files[name] = h.Mode
		dst := filepath.Join(dir, "rootfs", name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, os.FileMode(h.Mode)&0o777|0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func untar(t *testing.T, src, dir string) {
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				var b []byte
				if b, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(dst, b, 0o644)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
