package cluster_test

import (
	"crypto/tls"
	"log"
	"os"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/cluster"
	"github.com/toolgrain/toolgrain/tools"
)

// A member of a fixed fleet of three, on the automanaged membership provider, with mutual TLS
// between members. Every member runs the same code with its own Addr and HealthPort; the
// secret file and the certificates are the deployment's. (Not run: it needs the other members.)
func ExampleStart() {
	secret, err := os.ReadFile("/etc/mcp/cluster.key") // at least 32 bytes, the same on every member
	if err != nil {
		log.Fatal(err)
	}
	var tlsCfg *tls.Config // this member's certificate, the members' CA, tls.RequireAndVerifyClientCert
	var myTools []tools.Tool

	node, err := cluster.Start(cluster.Config{
		// This member's remote (gRPC) address, reached by the others, and the members' health
		// endpoints, this one's included.
		Addr:       "10.0.0.1:7000",
		Members:    []string{"10.0.0.1:7100", "10.0.0.2:7100", "10.0.0.3:7100"},
		HealthPort: 7100,
		Secret:     secret, // signs session and task ids
		TLS:        tlsCfg,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close() // after the server: leaves the cluster and stops its actor system
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools:        myTools,
		Cluster:      node,                                      // the server runs on the cluster's actor system
		RequestState: toolgrain.RequestStateConfig{Key: secret}, // any member accepts another's requestState
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// Mount srv.Handler() at /mcp as on a single server; a round-robin load balancer in front.
}
