//go:build !schedgate_mutant_memory_only_ledger

package networkslots

import "testing"

func TestMemoryOnlyLedgerOffByDefault(t *testing.T) {
	if memoryOnlyLedger {
		t.Fatal("memoryOnlyLedger is on without the schedgate_mutant_memory_only_ledger tag")
	}
}
