module colo

go 1.26.8

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	golang.org/x/sys v0.28.0 // indirect
)
