//go:build schedgate_mutant_leaky_unreserve

package networkslots

import "testing"

func TestLeakyUnreserveOnWithTag(t *testing.T) {
	if !leakyUnreserve {
		t.Fatal("leakyUnreserve is off although the schedgate_mutant_leaky_unreserve tag is set")
	}
}
