package poolscheduler

import "schedgate/pkg/mutant"

// Plugin is the name the pool scheduler's mutants are defined under.
const Plugin = "PoolScheduler"

// The mutants of the pool scheduler (see schedgate/pkg/mutant for how a
// build is one). THESE ARE DELIBERATELY BROKEN BUILDS for mutation testing:
// each breaks one thing the scenario suite must notice.
var (
	// ignoresGPUCapacity makes the fit check skip nvidia.com/gpu: a node
	// whose GPUs are all requested still fits a GPU pod, which is bound
	// there and never runs. A suite that passes against this build is not
	// checking extended-resource capacity.
	ignoresGPUCapacity = mutant.Define(Plugin, "pool-ignores-gpu-capacity",
		"the fit check skips "+string(ResourceGPU)+", so a full GPU node still fits")

	// bindUnchecked makes the bind skip the live node check: a pod whose
	// node was deleted after it was chosen (for instance while the bind was
	// held) is bound to the vanished node. A suite that passes against this
	// build is not checking node deletion between choice and bind.
	bindUnchecked = mutant.Define(Plugin, "pool-bind-unchecked",
		"the bind skips the live node check and binds to a node deleted meanwhile")

	// noRequeue makes cache changes never requeue unschedulable pods: only
	// the periodic resync does, so a pod that a new node, a relabelled node
	// or a freed one would fit waits for the resync. A suite that passes
	// against this build is not checking that pods are retried promptly.
	noRequeue = mutant.Define(Plugin, "pool-no-requeue",
		"cache changes never requeue unschedulable pods; only the periodic resync does")
)
