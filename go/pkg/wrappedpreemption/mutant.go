package wrappedpreemption

import "schedgate/pkg/mutant"

// Name is the plugin's name in a profile.
const Name = "WrappedPreemption"

// Mutant is the build whose plugin evicts pods of its preemptor's own priority.
var Mutant = mutant.Define("kube-scheduler", "preempts-equal-priority",
	"DefaultPreemption evicts pods of its preemptor's own priority")
