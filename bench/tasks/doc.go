// Package tasks measures the tasks extension (io.modelcontextprotocol/tasks) of the engine at
// scale: 10,000 tasks running at once on one server, their memory, the latency of tasks/get, and
// 10,000 cancellations after which no task may be left running. It has no code of its own: run
//
//	go test -run '^$' -bench Tasks -benchtime 1x ./bench/tasks
//
// The server is driven in process through its in-memory client (raw JSON-RPC, no I/O), so the
// figures are the engine's: actors, handlers and the store.
package tasks
