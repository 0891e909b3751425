package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"colo/workload/docker"
)

func init() {
	image := &cobra.Command{
		Use:   "image",
		Short: "Container images for platform: linux",
	}
	var tag, binary string
	build := &cobra.Command{
		Use:   "build",
		Short: "Build a FROM scratch image around the static colo binary (no registry, no pull)",
		Long: `build wraps a static colo binary (its stressors and synthetic workloads) in a
FROM scratch image with entrypoint /colo, through the Docker Engine API with an
in-memory build context: nothing is pulled, so it works without a registry.

The binary is the running colo when it is statically linked, else a CGO_ENABLED=0
build of the colo source tree around the working directory (needs the go tool), or
the file given with --binary.`,
		Example: "  colo image build\n  colo image build --tag colo:dev\n  colo image build --binary ./colo-static",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tag == "" {
				return badInputf("--tag is empty; give a name such as colo:latest")
			}
			if binary != "" {
				if _, err := os.Stat(binary); err != nil {
					return badInputf("--binary %s: %v", binary, err)
				}
				if ok, err := docker.IsStatic(binary); err != nil || !ok {
					return badInputf("--binary %s: not a static ELF executable (build it with CGO_ENABLED=0 go build ./cmd/colo)", binary)
				}
			}
			ctx := cmd.Context()
			r, err := docker.New(ctx, docker.Options{})
			if err != nil {
				return err
			}
			defer r.Close()
			bin := binary
			if bin == "" {
				self, _ := os.Executable()
				path, cleanup, err := docker.StaticColo(ctx, self, "")
				if err != nil {
					return err
				}
				defer cleanup()
				bin = path
			}
			id, err := docker.BuildColoImage(ctx, r.Client(), tag, bin)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s (%s) from %s\n", tag, id, bin)
			return nil
		},
	}
	build.Flags().StringVar(&tag, "tag", docker.DefaultImage, "image name and tag")
	build.Flags().StringVar(&binary, "binary", "", "static colo binary to package (default: this one, or a CGO_ENABLED=0 build of the source tree)")
	image.AddCommand(build)
	rootCmd.AddCommand(image)
}
