// Command etcd is the upstream etcd server, built from the etcd module version
// that the pinned k8s.io/kubernetes module requires.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
