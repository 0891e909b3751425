// Package machinetest gives tests the machine profiles of the catalogue (colo/machine)
// without repeating the error check.
package machinetest

import (
	"testing"

	"colo/machine"
)

// Get returns the catalogue's profile name (machine.Get), failing the test when there is
// none.
func Get(t testing.TB, name string) *machine.Profile {
	t.Helper()
	m, err := machine.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
