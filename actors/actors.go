// Package actors is what a host that runs its own protoactor-go actor system needs of the
// engine's actors: an actor system that logs through zap ([NewSystem]), and the name under which
// a server's actors live ([RootPrefix]).
//
// A server (toolgrain.NewServer) is a tree of actors on an actor system of its own or on the
// host's (toolgrain.Config.ActorSystem):
//
//	server supervisor       toolgrain$<n>, the server's RootPID
//	├── diagnostics actor   runs OnError; its failures never reach a client
//	├── tool actors         one per tool; the admission gate for tools with a concurrency limit
//	├── tool-<name>         one per actor-backed tool defined by Props, running the host's actor
//	├── task registry       the tasks extension: one task actor per task
//	└── connection actors   one per stdio stream, in-memory client or legacy HTTP session,
//	    │                   and one that serves the HTTP transport's stateless requests
//	    ├── request actors  one per tools/call; each owns its call's cancellation state
//	    └── operations      one per resources/read, prompts/get, completion/complete, custom
//	                        method and tasks/* request, owning theirs alike
//
// No Receive ever blocks: handlers run on goroutines owned by their request actor, OnError
// callbacks on goroutines owned by the diagnostics actor, and every wait is a message. A call of
// an actor-backed tool is a message to the tool's actor (the host's, or a tool-<name> child),
// whose reply comes back as a message too (tools.ActorCall, tools.ActorResult).
//
// On an actor system shared with a host, the supervisor's name is checked to be free and the
// server's Close stops exactly the tree below it, leaving the system and the host's actors
// running. The tree's code is internal to the module; docs/internals.md follows a call through
// it.
package actors

// RootPrefix starts the name of the engine's top-level actor, "toolgrain$<n>", where n comes
// from the actor system's id sequence. Every other actor of the engine is below it, so its id
// starts with that name and a slash.
const RootPrefix = "toolgrain"
