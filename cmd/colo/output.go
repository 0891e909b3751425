package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// One convention for machine-readable output (docs/json.md): every command that prints
// results takes --json and then prints exactly one JSON value on stdout (progress, warnings
// and interval lines go to stderr). Commands that had --format keep it: --format json is
// the same as --json, and --format csv stays where the results are a table.

// jsonFlag registers --json on fs.
func jsonFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "json", false, "print the results as one JSON value (keys in docs/json.md)")
}

// outputFormat resolves --json and --format into one of formats (the first is the
// default): --json means json, and contradicting it is bad input.
func outputFormat(asJSON bool, format string, formats ...string) (string, error) {
	if format == "" {
		format = formats[0]
	}
	if !slices.Contains(formats, format) {
		return "", badInputf("--format %q: want %s", format, strings.Join(formats, ", "))
	}
	if asJSON {
		if format != formats[0] && format != "json" {
			return "", badInputf("--json and --format %s contradict each other", format)
		}
		return "json", nil
	}
	return format, nil
}

// writeJSON prints v as one indented JSON value.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
