//go:build schedgate_mutant_memory_only_ledger

package networkslots

import "testing"

func TestMemoryOnlyLedgerOnWithTag(t *testing.T) {
	if !memoryOnlyLedger {
		t.Fatal("memoryOnlyLedger is off although the schedgate_mutant_memory_only_ledger tag is set")
	}
}
