// Package data embeds the real measurements colo ships with (each folder has its
// PROVENANCE.md), so that the default commands run without any file argument.
package data

import "embed"

// FS holds pbbcache-skylake/ (per-way SPEC CPU2000/2006 profiles on an 11-way Skylake-SP
// LLC, PBBCache's input, GPL-3.0 data) and bubbleup-spec2017/ (Bubble-Up sensitivity curves,
// reporter curve and contentiousness measurements of SPEC CPU2017).
//
//go:embed pbbcache-skylake bubbleup-spec2017
var FS embed.FS

// PBBCacheMetrics is the path inside FS of the per-ways metrics table (metrics.csv format).
const PBBCacheMetrics = "pbbcache-skylake/metrics.csv"

// PBBCacheWorkloads is the path inside FS of the six-application workloads file.
const PBBCacheWorkloads = "pbbcache-skylake/workloads.csv"

// BubbleUp is the directory inside FS of the Bubble-Up SPEC CPU2017 data set.
const BubbleUp = "bubbleup-spec2017"
