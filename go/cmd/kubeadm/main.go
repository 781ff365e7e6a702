// Command kubeadm is the upstream kubeadm, built from the pinned
// k8s.io/kubernetes module for schedgate's kind node image. Built with the
// version ldflags, it asks for control-plane images of the pinned version.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	kubeadmerrors.HandleError(app.Run())
}
