//go:build !schedgate_mutant_leaky_unreserve

package networkslots

import "testing"

func TestLeakyUnreserveOffByDefault(t *testing.T) {
	if leakyUnreserve {
		t.Fatal("leakyUnreserve is on without the schedgate_mutant_leaky_unreserve tag")
	}
}
