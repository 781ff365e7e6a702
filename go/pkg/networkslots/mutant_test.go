package networkslots

import (
	"context"
	"strings"
	"testing"

	"schedgate/pkg/mutant"
)

// setMutant makes the test binary the mutant name until the test ends.
func setMutant(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(mutant.SetForTest(name))
}

func TestEachMutantNameTurnsOnExactlyItsSwitch(t *testing.T) {
	switches := map[string]mutant.Switch{
		"leakyUnreserve":     leakyUnreserve,
		"blockingPermit":     blockingPermit,
		"prebindNoRecheck":   prebindNoRecheck,
		"memoryOnlyLedger":   memoryOnlyLedger,
		"slowFilter":         slowFilter,
		"preloadInPreFilter": preloadInPreFilter,
		"serialBind":         serialBind,
	}
	for _, tc := range []struct {
		mutant string
		on     string // the switch that must be on; "" for none
	}{
		{"", ""},
		{"leaky-unreserve", "leakyUnreserve"},
		{"blocking-permit", "blockingPermit"},
		{"prebind-no-recheck", "prebindNoRecheck"},
		{"memory-only-ledger", "memoryOnlyLedger"},
		{"slow-filter", "slowFilter"},
		{"prefilter-preload", "preloadInPreFilter"},
		{"serial-bind", "serialBind"},
	} {
		t.Run("mutant="+tc.mutant, func(t *testing.T) {
			setMutant(t, tc.mutant)
			for name, m := range switches {
				if got, want := m.On(), name == tc.on; got != want {
					t.Errorf("%s.On() = %v, want %v", name, got, want)
				}
			}
			if err := mutant.Check(); err != nil {
				t.Errorf("Check with %q = %v", tc.mutant, err)
			}
			banner := mutant.Banner()
			if tc.mutant == "" && banner != "" {
				t.Errorf("the correct build announces %q", banner)
			}
			if tc.mutant != "" && !strings.Contains(banner, "DELIBERATELY BROKEN BUILD: NetworkSlots mutant "+tc.mutant+": ") {
				t.Errorf("banner of %s = %q", tc.mutant, banner)
			}
		})
	}
	if n := len(mutant.Known(Name)); n != len(switches) {
		t.Errorf("%d known mutants, %d switches tested", n, len(switches))
	}
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
