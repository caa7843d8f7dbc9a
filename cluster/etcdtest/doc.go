// Package etcdtest tests a cluster of Toolgrain servers on a real membership provider,
// protoactor-go's etcd provider against an embedded etcd server. It is a module of its own so
// that the etcd server's dependencies (about 160 modules) stay out of the engine's go.mod; run
// it with `cd cluster/etcdtest && go test ./...`.
//
// It runs without -race: its members share one process, and protoactor-go at the pinned version
// races with itself there (remote.Start writes package variables; the cluster's BlockList is read
// and written unguarded). The members of the multi-process tests in cmd/server run race-built,
// one per process, and fail only on races that involve Toolgrain's code.
package etcdtest
