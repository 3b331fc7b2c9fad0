// Command image builds the otelcol-evalbridge container image without a
// container daemon and writes it as an OCI image layout in a tarball
// (oci-layout, index.json, blobs/). deploy/image/build.sh runs it with
// `go run ./deploy/image`; the Dockerfile at the repository root builds the
// same image with a daemon.
//
// The image is one layer on an empty base, as the Dockerfile's `FROM scratch`:
//
//	/otelcol-evalbridge                        the static binary (ENTRYPOINT)
//	/etc/ssl/certs/ca-certificates.crt         CA certificates
//	/etc/otelcol-evalbridge/config.yaml        the default config (CMD --config)
//
// run as user 10001, ports 4317, 4318, 8888, 8889 and 13133, with the OCI labels
// of the Dockerfile.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's paths and runtime settings (contract §22). The Dockerfile
// states the same; deploy/image's test reads them back from a built image.
const (
	binaryPath = "/otelcol-evalbridge"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	configPath = "/etc/otelcol-evalbridge/config.yaml"
	user       = "10001"
)

var (
	entrypoint   = []string{binaryPath}
	cmd          = []string{"--config=" + configPath}
	exposedPorts = []string{"4317/tcp", "4318/tcp", "8888/tcp", "8889/tcp", "13133/tcp"}
)

type options struct {
	binary, config, ca        string
	version, revision, source string
	arch, out                 string
	created                   time.Time
}

func main() {
	var o options
	var epoch int64
	flag.StringVar(&o.binary, "binary", "", "the static linux otelcol-evalbridge binary")
	flag.StringVar(&o.config, "config", "deploy/image/config.yaml", "the image's default config")
	flag.StringVar(&o.ca, "ca", "/etc/ssl/certs/ca-certificates.crt", "the CA certificate bundle (PEM)")
	flag.StringVar(&o.version, "version", "0.0.0-dev", "the version (image label and ref name)")
	flag.StringVar(&o.revision, "revision", "", "the git commit (image label)")
	flag.StringVar(&o.source, "source", "https://github.com/evalbridge/evalbridge", "the source repository (image label)")
	flag.StringVar(&o.arch, "arch", "amd64", "the binary's GOARCH")
	flag.Int64Var(&epoch, "created", 0, "creation time, seconds since the epoch (SOURCE_DATE_EPOCH); same inputs, same image")
	flag.StringVar(&o.out, "out", "", "the OCI image layout tarball to write")
	flag.Parse()
	o.created = time.Unix(epoch, 0).UTC()
	if o.binary == "" || o.out == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./deploy/image -binary PATH -out OUTPUT.tar [-version V] [-revision SHA] [-created EPOCH]")
		os.Exit(2)
	}
	img, err := build(o)
	if err == nil {
		err = writeLayoutTar(img, o.version, o.out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy/image:", err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("wrote %s (%s, %s)\n", o.out, o.version, d)
}

// labels are the image's OCI annotations, as the Dockerfile's LABEL lines.
func labels(o options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "otelcol-evalbridge",
		"org.opencontainers.image.description": "OpenTelemetry Collector distribution that scores LLM agents from their traces",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
}

func build(o options) (v1.Image, error) {
	files := []layerFile{
		{name: strings.TrimPrefix(binaryPath, "/"), src: o.binary, mode: 0o755},
		{name: strings.TrimPrefix(caPath, "/"), src: o.ca, mode: 0o644},
		{name: strings.TrimPrefix(configPath, "/"), src: o.config, mode: 0o644},
	}
	layerTar, err := tarFiles(files, o.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: o.created},
			CreatedBy: "deploy/image/build.sh: " + strings.Join([]string{binaryPath, caPath, configPath}, " "),
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.arch
	cf.Created = v1.Time{Time: o.created}
	cf.Config.User = user
	cf.Config.Entrypoint = entrypoint
	cf.Config.Cmd = cmd
	cf.Config.Labels = labels(o)
	cf.Config.ExposedPorts = map[string]struct{}{}
	for _, p := range exposedPorts {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	return mutate.ConfigFile(img, cf)
}

type layerFile struct {
	name, src string
	mode      int64
}

// tarFiles writes the layer: the files with their parent directories, owned
// by root, every time stamp the creation time, in a fixed order.
func tarFiles(files []layerFile, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		var dirs []string
		for d := filepath.Dir(f.name); d != "."; d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
		sort.Strings(dirs) // parents first
		for _, d := range dirs {
			if seen[d] {
				continue
			}
			seen[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeLayoutTar writes img as an OCI image layout (its index names the
// image by version) into a temporary directory and tars that directory.
func writeLayoutTar(img v1.Image, version, out string) error {
	dir, err := os.MkdirTemp("", "evalbridge-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return err
	}

	var names []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, name := range names {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
		} else {
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if !st.IsDir() {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				_, err = tw.Write(b)
			}
			if err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	return errors.Join(tw.Close(), f.Close())
}
