package core

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"colo/cbm"
	"colo/machine"
)

// DefaultFloor is --default-ways' default: a fifth of the ways (at least two) stay with
// system/default, where everything not in a managed container runs (system daemons,
// the kubelet, the container runtime).
const DefaultFloor = "20%"

// ParseFloor reads --default-ways: a number of ways ("3") or a share of them ("20%",
// rounded up). The floor is at least 2 ways (1 with a cache of 2) and at most ways−1, so
// the policy keeps at least one way to give.
//
//	floor = clamp(ceil(P/100 × ways), 2, ways−1)     or clamp(N, 1, ways−1)
func ParseFloor(spec string, ways int) (int, error) {
	spec = strings.TrimSpace(spec)
	var n int
	if p, ok := strings.CutSuffix(spec, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f > 0 && f < 100) {
			return 0, fmt.Errorf("--default-ways %q: a share in (0%%, 100%%) or a number of ways", spec)
		}
		n = max(2, int(math.Ceil(f/100*float64(ways))))
	} else {
		v, err := strconv.Atoi(spec)
		if err != nil || v < 1 || v >= ways {
			return 0, fmt.Errorf("--default-ways %q: a number of ways in 1..%d or a share such as 20%%", spec, ways-1)
		}
		n = v
	}
	return min(n, ways-1), nil
}

// HostReserve places the floor: the top floor ways of the administrator's default admin
// (never a way it excluded), and the policy's reserve_ways that keeps them — the policy
// reserves the top ways of the cache, so it must reserve from the floor's lowest way up:
//
//	floor ways = the top `floor` set bits of admin's highest contiguous run
//	reserve_ways = ways − (index of the floor's lowest way)
//
// A default narrower than floor gives the whole default.
func HostReserve(m *machine.Profile, admin uint64, floor int) (region uint64, reserveWays int) {
	ways := m.LLC.Ways
	if admin == 0 {
		admin = m.FullMask()
	}
	run := uint64(cbm.Mask(admin).LongestRun(ways))
	hi := 63 - bits.LeadingZeros64(run)
	n := min(floor, bits.OnesCount64(run))
	for i := 0; i < n; i++ {
		region |= 1 << uint(hi-i)
	}
	low := bits.TrailingZeros64(region)
	return region, ways - low
}

// SetHost gives the core the host's share: admin, the administrator's system/default
// mask (0: the whole cache), which system/default never leaves, and reserveWays, the top
// ways the policy and the static requests never get (HostReserve), so system/default
// keeps at least the floor.
func (c *Core) SetHost(admin uint64, reserveWays int) {
	c.admin = admin & c.m.FullMask()
	c.reserve = c.m.FullMask() &^ (c.m.FullMask() >> uint(reserveWays))
	c.dirty = true
}
