// Package dockertest holds helpers for tests that need a real dockerd: they fail in CI
// (CI=true, where scripts/setup.sh starts dockerd) and skip with a message elsewhere
// (internal/testenv.Need).
package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"colo/internal/testenv"
	"colo/workload/docker"
)

// Require returns a connected Runtime (with opts) or fails/skips the test when dockerd is
// unreachable. The runtime is closed at cleanup.
func Require(t testing.TB, opts docker.Options) *docker.Runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := docker.New(ctx, opts)
	testenv.Need(t, "dockerd (apt-get install docker.io; scripts/setup.sh installs and starts it)", err)
	t.Cleanup(func() { r.Close() })
	return r
}

// Name returns a unique name for a test object (container, network, image tag).
func Name(t testing.TB, what string) string {
	return fmt.Sprintf("colotest-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano()%1e9)
}

// BuildProgImage compiles the Go main package in dir (relative to the module root or
// absolute) with CGO_ENABLED=0 and wraps it in a FROM scratch image with entrypoint
// /prog. The image is removed at cleanup.
func BuildProgImage(t testing.TB, r *docker.Runtime, pkgDir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "prog")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkgDir, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	tag := Name(t, "img") + ":test"
	ctx := context.Background()
	if _, err := docker.BuildScratchImage(ctx, r.Client(), tag, []docker.ImageFile{{Path: "/prog", Mode: 0o755, Data: data}}, []string{"/prog"}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.RemoveImage(context.Background(), r.Client(), tag) })
	return tag
}

// ColoImage builds the colo image from the source tree with `colo image build`'s code
// path (a static CGO_ENABLED=0 build) and removes it at cleanup.
func ColoImage(t testing.TB, r *docker.Runtime) string {
	t.Helper()
	tag, err := BuildColoImage(context.Background(), r, Name(t, "colo")+":test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.RemoveImage(context.Background(), r.Client(), tag) })
	return tag
}

// BuildColoImage builds the colo image under tag (for a TestMain that shares one image
// between tests; remove it with docker.RemoveImage).
func BuildColoImage(ctx context.Context, r *docker.Runtime, tag string) (string, error) {
	bin, cleanup, err := docker.StaticColo(ctx, "", "")
	if err != nil {
		return "", err
	}
	defer cleanup()
	if _, err := docker.BuildColoImage(ctx, r.Client(), tag, bin); err != nil {
		return "", err
	}
	return tag, nil
}
