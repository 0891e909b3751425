package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// DefaultImage is the tag `colo image build` produces and the Linux platform runs.
const DefaultImage = "colo:latest"

// ImageFile is one file of a scratch image.
type ImageFile struct {
	Path string // inside the image, absolute
	Mode int64
	Data []byte
}

// BuildScratchImage builds a `FROM scratch` image holding files, with the given
// entrypoint and labels, through the Engine API from an in-memory tar build context. It
// needs no registry: nothing is pulled. It returns the image ID.
func BuildScratchImage(ctx context.Context, cli *client.Client, tag string, files []ImageFile, entrypoint []string, labels map[string]string) (string, error) {
	if tag == "" {
		return "", errors.New("image tag is empty")
	}
	var df strings.Builder
	df.WriteString("FROM scratch\n")
	for i, f := range files {
		if !strings.HasPrefix(f.Path, "/") {
			return "", fmt.Errorf("image file %q: path must be absolute", f.Path)
		}
		fmt.Fprintf(&df, "COPY f%d %s\n", i, f.Path)
	}
	if len(entrypoint) > 0 {
		ep, _ := json.Marshal(entrypoint)
		fmt.Fprintf(&df, "ENTRYPOINT %s\n", ep)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(df.String())); err != nil {
		return "", err
	}
	for i, f := range files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := add(fmt.Sprintf("f%d", i), mode, f.Data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true,
		PullParent: false, Labels: labels, Version: build.BuilderV1,
	})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return "", unavailable(cli.DaemonHost(), err)
		}
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	// The build reports progress and errors as a JSON message stream.
	var id string
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	var log strings.Builder
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
			Aux    *struct {
				ID string `json:"ID"`
			} `json:"aux"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("build image %s: reading build output: %w", tag, err)
		}
		if m.Error != "" {
			return "", fmt.Errorf("build image %s: %s (build log: %s)", tag, m.Error, strings.TrimSpace(log.String()))
		}
		log.WriteString(m.Stream)
		if m.Aux != nil && m.Aux.ID != "" {
			id = m.Aux.ID
		}
	}
	ins, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("build image %s: finished but the image is not there: %w", tag, err)
	}
	if id == "" {
		id = ins.ID
	}
	return id, nil
}

// RemoveImage deletes an image (forced, children pruned); a missing image is not an error.
func RemoveImage(ctx context.Context, cli *client.Client, ref string) error {
	_, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

// IsStatic reports whether the ELF file at path runs without a dynamic loader (no
// PT_INTERP, no shared libraries), i.e. inside a FROM scratch image.
func IsStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	libs, _ := f.ImportedLibraries()
	return len(libs) == 0, nil
}

// ModuleRoot walks up from dir to the directory whose go.mod declares module colo.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "module colo\n") {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no colo source tree (go.mod with `module colo`) at or above %s", dir)
		}
		d = parent
	}
}

// StaticColo returns a static colo binary for the image: the running executable when it
// is static, else a CGO_ENABLED=0 build of the colo source tree found from srcHint (or the
// working directory) with the go tool. The returned cleanup removes a temporary build.
func StaticColo(ctx context.Context, self, srcHint string) (path string, cleanup func(), err error) {
	nop := func() {}
	if self != "" {
		if ok, err := IsStatic(self); err == nil && ok {
			return self, nop, nil
		}
	}
	if srcHint == "" {
		srcHint, _ = os.Getwd()
	}
	root, err := ModuleRoot(srcHint)
	if err != nil {
		return "", nop, fmt.Errorf("%s is dynamically linked and %v; build a static colo first (CGO_ENABLED=0 go build ./cmd/colo) and run its `colo image build`, or run this from the source tree", self, err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nop, fmt.Errorf("%s is dynamically linked and the go tool is not on PATH to rebuild it statically; build with CGO_ENABLED=0 go build ./cmd/colo and use that binary", self)
	}
	dir, err := os.MkdirTemp("", "colo-image-")
	if err != nil {
		return "", nop, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "colo")
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-o", out, "./cmd/colo")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nop, fmt.Errorf("CGO_ENABLED=0 go build ./cmd/colo in %s: %v\n%s", root, err, msg)
	}
	return out, cleanup, nil
}

// BuildColoImage builds the FROM scratch colo image (entrypoint /colo) from a static
// binary and returns its ID.
func BuildColoImage(ctx context.Context, cli *client.Client, tag, binary string) (string, error) {
	ok, err := IsStatic(binary)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is dynamically linked and cannot run in a FROM scratch image; build it with CGO_ENABLED=0", binary)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", err
	}
	return BuildScratchImage(ctx, cli, tag, []ImageFile{{Path: "/colo", Mode: 0o755, Data: data}}, []string{"/colo"},
		map[string]string{"colo.image": "1"})
}
