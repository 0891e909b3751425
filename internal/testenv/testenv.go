// Package testenv decides what a test does when an external prerequisite (FUSE, chromium,
// influxd, ...) is missing: in CI (environment CI=true, where scripts/setup.sh installs
// every prerequisite) the test fails, so that a broken setup cannot pass as a green run of
// skipped tests; elsewhere it skips with the reason and how to get the prerequisite.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true, as .ci/run and most CI systems set).
func InCI() bool { return os.Getenv("CI") == "true" }

// Need stops the test when err (the reason a prerequisite is missing) is not nil: t.Fatalf
// in CI, t.Skipf elsewhere. what names the prerequisite and how to install it, e.g.
// "chromium (apt-get install chromium; scripts/setup.sh installs it)".
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("%s is required in CI (CI=true) but unusable: %v", what, err)
		return
	}
	t.Skipf("skipped: %s unusable: %v (set up with scripts/setup.sh; with CI=true this fails)", what, err)
}
