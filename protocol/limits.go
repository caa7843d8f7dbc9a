package protocol

import (
	"encoding/json"
	"strconv"
)

// MaxNestingDepth is the deepest nesting of arrays and objects a message may have. It is the
// limit of encoding/json, which [Decode] uses to check messages; a deeper message is a
// [CodeParseError].
const MaxNestingDepth = 10000

// CodeServerBusy: a request was refused, unprocessed, because a limit on the calls in flight,
// or on the open HTTP sessions, was reached; the client may send it again once one of its calls
// has finished (or a session has ended). On a cluster it also refuses a tasks/* request whose
// task's home cannot be reached now ([ErrTaskHomeUnreachable]). It is an application-defined code, outside the range
// JSON-RPC reserves (-32768 to -32000), whose upper part MCP keeps for its own codes.
const CodeServerBusy int64 = -31000

// Scopes of a [CodeServerBusy] error: which limit was reached.
const (
	BusyConnection = "connection" // the calls in flight on one connection or session
	BusyServer     = "server"     // the calls in flight on the whole server
	BusySessions   = "sessions"   // the HTTP sessions open on the server
	BusySubject    = "subject"    // the HTTP sessions open for one authenticated subject
)

// ErrServerBusy returns a [CodeServerBusy] error for a limit of limit calls in flight in scope
// ([BusyConnection] or [BusyServer]). Its message is
//
//	Server busy: too many calls in flight on this connection (limit 10000)
//	Server busy: too many calls in flight on the server (limit 100000)
//
// and its data {"scope":"connection","limit":10000}, so clients can tell the two apart. The
// text is part of the contract.
func ErrServerBusy(scope string, limit int) *WireError {
	where := "on the server"
	if scope == BusyConnection {
		where = "on this connection"
	}
	return busy(scope, limit, "Server busy: too many calls in flight "+where+" (limit "+strconv.Itoa(limit)+")")
}

// ErrTooManySessions returns the [CodeServerBusy] error that refuses an initialize over a limit
// of limit open HTTP sessions in scope ([BusySessions] or [BusySubject]). Its message is
//
//	Server busy: too many sessions open on the server (limit 10000)
//	Server busy: too many sessions open for this subject (limit 1000)
//
// and its data {"scope":"sessions","limit":10000}. The text is part of the contract.
func ErrTooManySessions(scope string, limit int) *WireError {
	where := "on the server"
	if scope == BusySubject {
		where = "for this subject"
	}
	return busy(scope, limit, "Server busy: too many sessions open "+where+" (limit "+strconv.Itoa(limit)+")")
}

// BusyTaskHome is the scope of [ErrTaskHomeUnreachable].
const BusyTaskHome = "task-home"

// ErrTaskHomeUnreachable returns the [CodeServerBusy] error that refuses a tasks/* request sent
// to one member of a cluster for a task that lives on another, which is still a member but
// cannot be reached at the moment (a passing fault, a restart under way), or which the member
// has not learnt of yet (it joined a moment ago): the task's status is not known to be
// anything, and the request is to be sent again. No answer to it reached the client: the home
// did not get it or, when the connection broke while it was being forwarded, its answer did not
// come whole (tasks/get reads, and a second tasks/cancel changes nothing; a tasks/update may
// have been applied). Its message is
//
//	Server busy: the cluster member holding this task cannot be reached now
//
// and its data {"scope":"task-home"}. The text is part of the contract.
func ErrTaskHomeUnreachable() *WireError {
	return &WireError{Code: CodeServerBusy, Message: "Server busy: the cluster member holding this task cannot be reached now",
		Data: json.RawMessage(`{"scope":"` + BusyTaskHome + `"}`)}
}

// busy returns a [CodeServerBusy] error with message and the data {"scope":…,"limit":…}.
func busy(scope string, limit int, message string) *WireError {
	data, _ := json.Marshal(struct {
		Scope string `json:"scope"`
		Limit int    `json:"limit"`
	}{scope, limit})
	return &WireError{Code: CodeServerBusy, Message: message, Data: data}
}
