package networkslots

import (
	"context"
	"strings"
	"testing"

	"schedgate/pkg/mutant"
	"schedgate/pkg/mutant/mutanttest"
)

// setMutant makes the test binary the mutant name until the test ends.
func setMutant(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(mutant.SetForTest(name))
}

func TestEachMutantNameTurnsOnExactlyItsSwitch(t *testing.T) {
	mutanttest.Switches(t, Name, map[string]mutant.Switch{
		"leakyUnreserve":     leakyUnreserve,
		"blockingPermit":     blockingPermit,
		"prebindNoRecheck":   prebindNoRecheck,
		"memoryOnlyLedger":   memoryOnlyLedger,
		"slowFilter":         slowFilter,
		"preloadInPreFilter": preloadInPreFilter,
		"serialBind":         serialBind,
		"busyPreFilter":      busyPreFilter,
	}, map[string]string{
		"leaky-unreserve":    "leakyUnreserve",
		"blocking-permit":    "blockingPermit",
		"prebind-no-recheck": "prebindNoRecheck",
		"memory-only-ledger": "memoryOnlyLedger",
		"slow-filter":        "slowFilter",
		"prefilter-preload":  "preloadInPreFilter",
		"serial-bind":        "serialBind",
		"busy-prefilter":     "busyPreFilter",
	})
}

func TestNewRefusesAnUnknownMutant(t *testing.T) {
	for _, name := range []string{"leaky_unreserve", "Leaky-Unreserve", "leaky-unreserve ", "nonsense"} {
		setMutant(t, name)
		// The check comes before anything uses the handle, so none is needed.
		pl, err := New(context.Background(), nil, nil)
		if err == nil || pl != nil {
			t.Fatalf("New with mutant %q = %v, %v; want an error", name, pl, err)
		}
		for _, want := range []string{`"` + name + `"`, "leaky-unreserve, blocking-permit, prebind-no-recheck, memory-only-ledger"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("New with mutant %q: error %q does not name %s", name, err, want)
			}
		}
		if b := mutant.Banner(); !strings.Contains(b, `"`+name+`"`) || !strings.Contains(b, "refuse to start") {
			t.Errorf("banner of unknown mutant %q = %q", name, b)
		}
	}
}
