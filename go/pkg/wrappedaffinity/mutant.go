package wrappedaffinity

import "schedgate/pkg/mutant"

// Name is the plugin's name in a profile.
const Name = "WrappedNodeAffinity"

// IgnoresMatchFields is the build whose node affinity reads a pod's required terms without their matchFields:
// a DaemonSet's pods, each pinned to its node by name (metadata.name In [node]), may then go to any node.
var IgnoresMatchFields = mutant.Define("kube-scheduler", "affinity-ignores-matchfields",
	"NodeAffinity drops matchFields from required terms: a pod pinned to a node by name goes anywhere")
