// Package containerdtest holds what the tests that run a real containerd share: finding
// the cached containerd v2, runc and crictl (scripts/build-containerd.sh), a containerd
// configuration with CRI and NRI under one throw-away directory, crictl against it,
// moving Docker images into it (no registry is reachable), and the pod sandbox ("pause")
// image. Starting and stopping the daemon stays with the caller (a test's own process,
// or testcluster's component list).
package containerdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"colo/workload/docker"
)

// Binaries are the programs Bin's directory must hold.
var Binaries = []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc", "crictl"}

// Bin returns the directory of containerd, ctr, the runc shim, runc and crictl: the last
// line scripts/build-containerd.sh prints (it builds what is missing into a cache;
// COLO_CONTAINERD_BIN overrides it). The script is found from the working directory up.
func Bin() (string, error) {
	script, err := findUp(filepath.Join("scripts", "build-containerd.sh"))
	if err != nil {
		return "", err
	}
	out, err := exec.Command("bash", script).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return "", err
		}
	}
	return bin, nil
}

// findUp looks for rel in the working directory and each of its parents.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory", rel)
		}
		dir = parent
	}
}

// Sock is containerd's CRI and API socket under dir.
func Sock(dir string) string { return filepath.Join(dir, "containerd.sock") }

// NRISock is the socket NRI plugins (colo agent --runtime nri) connect to under dir.
func NRISock(dir string) string { return filepath.Join(dir, "nri.sock") }

// Config is a containerd v2 configuration that keeps everything under dir (roots, sockets,
// NRI plugin and CNI directories), runs containers with bin's runc on the native
// snapshotter, and pins sandbox as the pod sandbox image so nothing is pulled. dir should
// be short: unix socket paths are limited to 108 bytes.
func Config(dir, bin, sandbox string) string {
	return fmt.Sprintf(`version = 3
root = "%[1]s/root"
state = "%[1]s/state"
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/opt"
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "%[1]s/nri.sock"
  plugin_path = "%[1]s/nri-plugins"
  plugin_config_path = "%[1]s/nri-conf"
[plugins."io.containerd.cri.v1.runtime"]
  # this VM refuses lowering oom_score_adj below the parent's
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["%[1]s/cni-bin"]
    conf_dir = "%[1]s/cni-conf"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      snapshotter = "native"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "%[2]s/runc"
        SystemdCgroup = false
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "native"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
`, dir, bin, sandbox)
}

// Crictl runs bin's crictl against the containerd whose socket is sock and returns its
// output (with its error output when it fails).
func Crictl(ctx context.Context, bin, sock string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "crictl"),
		append([]string{"--runtime-endpoint", "unix://" + sock, "--image-endpoint", "unix://" + sock, "--timeout", "30s"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return strings.TrimSpace(string(out) + "\n" + stderr.String()), fmt.Errorf("crictl %v: %w", args, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ImportImage moves a Docker image into containerd's k8s.io namespace (docker save, then
// ctr images import), through a temporary tar file in dir.
func ImportImage(ctx context.Context, bin, sock, dir, ref string) error {
	tar, err := os.CreateTemp(dir, "image-*.tar")
	if err != nil {
		return err
	}
	tar.Close()
	defer os.Remove(tar.Name())
	if out, err := exec.CommandContext(ctx, "docker", "save", "-o", tar.Name(), ref).CombinedOutput(); err != nil {
		return fmt.Errorf("docker save %s: %v\n%s", ref, err, out)
	}
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "ctr"), "--address", sock, "-n", "k8s.io", "images", "import", tar.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %v\n%s", ref, err, out)
	}
	return nil
}

// pauseSource is the pod sandbox's program: it waits for SIGTERM or SIGINT.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

// BuildPauseImage builds the pod sandbox image tag in Docker: FROM scratch around a
// static program that waits for a signal. tmp is a scratch directory for the build.
func BuildPauseImage(ctx context.Context, tmp, tag string) error {
	if err := os.WriteFile(filepath.Join(tmp, "pause.go"), []byte(pauseSource), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", "pause", "pause.go")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build pause: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(tmp, "pause"))
	if err != nil {
		return err
	}
	cli, err := docker.New(ctx, docker.Options{})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = docker.BuildScratchImage(ctx, cli.Client(), tag, []docker.ImageFile{{Path: "/pause", Mode: 0o755, Data: data}}, []string{"/pause"}, nil)
	return err
}
