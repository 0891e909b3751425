// Package policy holds the static cache-partitioning policies compared by LFOC+ and
// PBBCache (seed001.md §1–§3): shared, equal, ucp, ucp-slowdown, kpart, dunn, cpa, lfoc,
// lfoc+, the optimal strict partitionings opt-stp / opt-unf and the optimal clusterings
// optc-stp / optc-unf, and the streaming / sensitive / light-sharing classification.
//
// Each policy is a pure function of (machine, per-app profiles, options) to a Solution:
// clusters of applications with a way count and a capacity bitmask that the machine
// accepts (contiguous on Intel, at least min_cbm_bits, packed without overlap unless the
// policy asks for overlap). The cost of a solution is estimated with package perfmodel.
package policy
