package networkslots

import "schedgate/pkg/mutant"

// The mutants of this plugin (see schedgate/pkg/mutant for how a build is
// one). THESE ARE DELIBERATELY BROKEN BUILDS for mutation testing: each
// breaks one thing the scenario suite must notice.
var (
	// leakyUnreserve makes Unreserve keep the pod's holding instead of
	// releasing it: slots of pods that fail after Reserve (permit
	// timeout/reject, pre-bind or bind failure) leak, so nodes fill up with
	// phantom holdings. A suite that passes against this build is not
	// checking that failed pods give their slots back.
	leakyUnreserve = mutant.Define(Name, "leaky-unreserve",
		"Unreserve keeps the pod's holding, so slots of pods that fail after Reserve leak")

	// blockingPermit makes the permit-hold fault block inside Permit
	// (polling the pod until the hold is lifted) instead of returning Wait:
	// a held pod occupies the scheduling cycle, so deleting it frees its
	// slot in the ledger but no other pod is scheduled until the hold times
	// out. A suite that passes against this build is not checking that a
	// deleted waiting pod's slot is usable at once.
	blockingPermit = mutant.Define(Name, "blocking-permit",
		"a permit-hold pod blocks inside Permit instead of waiting, holding the scheduling cycle")

	// prebindNoRecheck makes PreBind skip re-reading the node: a pod whose
	// node was deleted between Reserve and Bind is bound to the vanished
	// node (the API server accepts a binding to a node that does not exist).
	// A suite that passes against this build is not checking that node
	// deletion rolls back.
	prebindNoRecheck = mutant.Define(Name, "prebind-no-recheck",
		"PreBind does not re-read the node, so a pod is bound to a node deleted while it waited")

	// memoryOnlyLedger makes the ledger in-memory state only: it is not
	// rebuilt from the pods the informer lists (adds and updates are
	// ignored; only this process's Reserve/PostBind and pod deletions change
	// it), and Filter trusts it instead of the scheduler's snapshot. A
	// restarted scheduler forgets every pod bound before it started and
	// places pods on full nodes. A suite that passes against this build is
	// not checking a restart mid-wait.
	memoryOnlyLedger = mutant.Define(Name, "memory-only-ledger",
		"the ledger is never rebuilt from bound pods and Filter trusts it over the snapshot")

	// slowFilter makes Filter ask a "remote" slot service per node (it
	// sleeps remoteQuery each call and rejects nothing): the design's
	// warning about an expensive query in the per-node Filter, which grows
	// with candidate nodes and pending pods. A suite that passes against
	// this build is not checking the scheduler's speed against a baseline.
	slowFilter = mutant.Define(Name, "slow-filter",
		"Filter makes a remote query per node (sleeps "+remoteQuery.String()+" each call)")

	// preloadInPreFilter makes the same query once per pod, in PreFilter,
	// and lets Filter read the answer: the design's advice. It is slower
	// than the correct build by one query per pod, which a performance
	// budget must allow: THIS BUILD MUST PASS (a control, not a defect).
	preloadInPreFilter = mutant.Define(Name, "prefilter-preload",
		"PreFilter makes the remote query once per pod (sleeps "+remoteQuery.String()+"); a control that must pass")

	// serialBind makes PreBind take one process-wide lock and hold it until
	// the pod is bound (PostBind) or given up (Unreserve), after a remote
	// ledger write under it (sleeps remoteQuery): binding cycles, which run
	// concurrently in kube-scheduler, bind one pod at a time. A suite that
	// passes against this build is not checking bind throughput.
	serialBind = mutant.Define(Name, "serial-bind",
		"PreBind holds one process-wide lock until the pod is bound: pods bind one at a time")

	// busyPreFilter makes PreFilter spin until the CPU time this process
	// has burned on purpose is a fifth of what it spent otherwise since the
	// first PreFilter call (the spinning thread costs the Go runtime some
	// more): a scheduler that costs 20-30 % more CPU per pod on any machine,
	// the size of regression a performance budget must see. A suite that
	// passes against this build does not measure the scheduler's CPU per
	// pod closely enough.
	busyPreFilter = mutant.Define(Name, "busy-prefilter",
		"PreFilter spins until the process spends a fifth more CPU than it otherwise would")
)
