//go:build schedgate_mutant_memory_only_ledger

package networkslots

// memoryOnlyLedger makes the ledger in-memory state only: it is not rebuilt
// from the pods the informer lists (adds and updates are ignored; only this
// process's Reserve/PostBind and pod deletions change it), and Filter trusts
// it instead of the scheduler's snapshot.
//
// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
// -tags schedgate_mutant_memory_only_ledger, a restarted scheduler forgets
// every pod bound before it started and places pods on full nodes. A suite
// that passes against this build is not checking a restart mid-wait.
const memoryOnlyLedger = true
