//go:build !schedgate_mutant_memory_only_ledger

package networkslots

// memoryOnlyLedger is false in normal builds. See memory_only_ledger.go for the deliberately
// broken mutant build.
const memoryOnlyLedger = false
