package protocol

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// MCP revision 2026-07-28 ("modern"): every request carries its protocol version, the client's
// capabilities and, optionally, its identity and log level in params._meta (the envelope), and is
// served on its own, without a session. A server that also speaks the earlier revisions
// ("legacy": the initialize handshake) decides the era of each message on its own (dual-era).

// LatestModernVersion is the newest revision of the modern era, whose requests each carry their
// protocol version and are served statelessly: the one the engine speaks to a modern peer.
const LatestModernVersion = "2026-07-28"

// ServedVersions lists every protocol version the engine serves, newest first: the modern
// revisions and the legacy ones of [SupportedVersions]. server/discover lists them as
// supportedVersions, and an unsupported-version error as supported. It must not be modified.
var ServedVersions = append([]string{LatestModernVersion}, SupportedVersions...)

// IsModernVersion reports whether v is a protocol version served statelessly.
func IsModernVersion(v string) bool { return v == LatestModernVersion }

// Keys of the envelope in a modern request's params._meta, and of the members the server puts in
// results and notifications.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Methods of the modern revision.
const (
	// MethodServerDiscover asks for the server's versions, capabilities and instructions:
	// a request with the envelope only, answered with [DiscoverResult].
	MethodServerDiscover = "server/discover"
	// MethodSubscriptionsListen opens a stream of the notifications chosen by
	// [ListenParams]; it is answered only when the server ends it.
	MethodSubscriptionsListen = "subscriptions/listen"
	// MethodSubscriptionsAcknowledged is the first notification of a listen stream: the
	// notifications the server agreed to send, as [ListenAcknowledgedParams].
	MethodSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
)

// Error codes of the modern revision.
const (
	// CodeHeaderMismatch: an HTTP header is missing, malformed or disagrees with the body.
	CodeHeaderMismatch int64 = -32020
	// CodeMissingClientCapability: the request needs a client capability it did not declare;
	// data.requiredCapabilities names it.
	CodeMissingClientCapability int64 = -32021
	// CodeUnsupportedProtocolVersion: the request's protocol version is not served; data
	// lists the supported versions and echoes the requested one.
	CodeUnsupportedProtocolVersion int64 = -32022
)

// Result types of the modern revision, the value of every result's resultType.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// Cache scopes of a cacheable result.
const (
	CachePublic  = "public"
	CachePrivate = "private"
)

// ErrHeaderMismatch returns a [CodeHeaderMismatch] error whose message is
// "Header mismatch: <detail>".
func ErrHeaderMismatch(format string, args ...any) *WireError {
	return &WireError{Code: CodeHeaderMismatch, Message: withDetail("Header mismatch", sprintf(format, args))}
}

// ErrUnsupportedVersion returns a [CodeUnsupportedProtocolVersion] error for the requested
// version, listing [ServedVersions].
func ErrUnsupportedVersion(requested string) *WireError {
	data, _ := json.Marshal(struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}{ServedVersions, requested})
	return &WireError{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version: " + requested,
		Data:    data,
	}
}

// ErrMissingCapability returns a [CodeMissingClientCapability] error whose data is
// {"requiredCapabilities": required}; required is a ClientCapabilities object such as
// {"sampling":{}}.
func ErrMissingCapability(required json.RawMessage) *WireError {
	data := make([]byte, 0, len(required)+32)
	data = append(data, `{"requiredCapabilities":`...)
	data = appendCompact(data, required)
	data = append(data, '}')
	return &WireError{
		Code:    CodeMissingClientCapability,
		Message: "Missing required client capability",
		Data:    data,
	}
}

// Envelope is what a modern request says about itself in params._meta. It is read from the
// request alone: nothing carries over from an earlier request.
type Envelope struct {
	// ProtocolVersion is the revision the request speaks, as sent (it may be unsupported).
	ProtocolVersion string
	// Capabilities are the client capabilities declared for this request; never nil. They are
	// shared by the requests that declare the same capabilities object, so they are read-only.
	Capabilities *ClientCapabilities
	// ClientInfo is the client's self-description, when it sent one (display only).
	ClientInfo *Implementation
	// LogLevel is the lowest level of log messages the request wants; "" means none at all.
	LogLevel string
	// Meta is the request's whole _meta object (progress token, trace context, ...).
	Meta json.RawMessage
}

// modernMarker is the key whose presence makes a request modern. A request without it in its
// raw params cannot be modern, which spares legacy requests the decoding of their _meta.
var modernMarker = []byte(`"` + MetaProtocolVersion + `"`)

// HasEnvelope reports whether params may carry a modern envelope: whether the key of its
// protocol version occurs in them. It is a cheap pre-test for [ReadEnvelope]; an escaped
// spelling of the key is not recognised, so a client must spell it plainly.
func HasEnvelope(params json.RawMessage) bool {
	return bytes.Contains(params, modernMarker)
}

// ReadEnvelope reads the envelope of a modern request from its params. It fails with a
// [CodeInvalidParams] error that names the problem when params is not an object, _meta is
// missing or not an object, the protocol version is missing or not a non-empty string, the
// capabilities are missing or not an object, clientInfo is present but not an object, or the
// log level is not one of [LogLevels]. It does not check that the version is served; see
// [CheckVersion].
func ReadEnvelope(params json.RawMessage) (*Envelope, *WireError) {
	return readEnvelope(params, false)
}

// Envelope is [ReadEnvelope] of m's params, which it need not check again when [Decode] read m.
func (m *Message) Envelope() (*Envelope, *WireError) {
	return readEnvelope(m.Params, m.valid)
}

// readEnvelope is ReadEnvelope; valid says that params is known to be valid JSON.
func readEnvelope(params json.RawMessage, valid bool) (*Envelope, *WireError) {
	p := trimSpace(params)
	if len(p) == 0 || isNull(p) {
		return nil, ErrInvalidParams("a %s request needs params with _meta", LatestModernVersion)
	}
	if p[0] != '{' || (!valid && !json.Valid(p)) {
		return nil, ErrInvalidParams("params must be an object")
	}
	// One walk over the members of params and of _meta, by the scanner the decoder uses: a
	// request's envelope is read on every modern request.
	ms, me := findMember(p, "_meta")
	if ms < 0 || p[ms] != '{' {
		return nil, ErrInvalidParams("params._meta must be an object with %s and %s", MetaProtocolVersion, MetaClientCapabilities)
	}
	meta := p[ms:me]
	var version, caps, info, level []byte
	eachMember(meta, func(key, val []byte) {
		switch string(key) {
		case `"` + MetaProtocolVersion + `"`:
			version = val
		case `"` + MetaClientCapabilities + `"`:
			caps = val
		case `"` + MetaClientInfo + `"`:
			info = val
		case `"` + MetaLogLevel + `"`:
			level = val
		}
	})
	env := &Envelope{Meta: json.RawMessage(meta[:len(meta):len(meta)])}
	if len(version) < 3 || version[0] != '"' {
		return nil, ErrInvalidParams("params._meta.%s must be a non-empty string", MetaProtocolVersion)
	}
	if string(version) == `"`+LatestModernVersion+`"` {
		env.ProtocolVersion = LatestModernVersion
	} else {
		env.ProtocolVersion = unquote(version)
	}
	if !declared(caps) {
		return nil, ErrInvalidParams("params._meta.%s must be an object", MetaClientCapabilities)
	}
	if env.Capabilities = readCapabilities(caps); env.Capabilities == nil {
		return nil, ErrInvalidParams("params._meta.%s: %s", MetaClientCapabilities, "malformed capability")
	}
	if len(info) > 0 && !isNull(info) {
		ci, ok := readImplementation(info)
		if !ok {
			return nil, ErrInvalidParams("params._meta.%s must be an object with name and version", MetaClientInfo)
		}
		env.ClientInfo = ci
	}
	if len(level) > 0 && !isNull(level) {
		if level[0] != '"' {
			return nil, ErrInvalidParams("params._meta.%s must be a string", MetaLogLevel)
		}
		env.LogLevel = unquote(level)
		if _, ok := LogSeverity(env.LogLevel); !ok {
			return nil, ErrInvalidParams("invalid log level %q", env.LogLevel)
		}
	}
	return env, nil
}

// A client sends the same capabilities object with every request, and decoding it is most of
// the work of reading an envelope; so the capabilities decoded from an object are kept, by the
// object's bytes, and shared by every request that sends the same bytes. The map is copied on
// write and read without a lock; it stops growing at capsCacheMax objects (a server's clients
// seldom send more than a handful of distinct ones), and objects longer than capsCacheKeyMax
// bytes are decoded every time.
var capsCache struct {
	m  atomic.Pointer[map[string]*ClientCapabilities]
	mu sync.Mutex // serializes writers
}

const (
	capsCacheMax    = 64
	capsCacheKeyMax = 1024
)

// noCapabilities are the capabilities of an empty object.
var noCapabilities = &ClientCapabilities{}

// readCapabilities returns the capabilities of the object raw, shared with every request that
// sent the same bytes (read-only, see [Envelope]); nil when raw does not decode.
func readCapabilities(raw []byte) *ClientCapabilities {
	if isEmptyObject(raw) {
		return noCapabilities
	}
	if m := capsCache.m.Load(); m != nil {
		if c, ok := (*m)[string(raw)]; ok {
			return c
		}
	}
	c := &ClientCapabilities{}
	if json.Unmarshal(raw, c) != nil {
		return nil
	}
	if len(raw) <= capsCacheKeyMax {
		capsCache.mu.Lock()
		old := capsCache.m.Load()
		if old == nil || len(*old) < capsCacheMax {
			m := make(map[string]*ClientCapabilities, 1+lenOf(old))
			if old != nil {
				maps.Copy(m, *old)
			}
			m[string(raw)] = c
			capsCache.m.Store(&m)
		}
		capsCache.mu.Unlock()
	}
	return c
}

func lenOf(m *map[string]*ClientCapabilities) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// readImplementation reads a clientInfo object: its string members name, title and version
// (others, such as icons, are display-only and left out). A member of another type is refused.
func readImplementation(raw []byte) (*Implementation, bool) {
	if !declared(raw) {
		return nil, false
	}
	ci, ok := &Implementation{}, true
	eachMember(trimSpace(raw), func(key, val []byte) {
		var dst *string
		switch string(key) {
		case `"name"`:
			dst = &ci.Name
		case `"title"`:
			dst = &ci.Title
		case `"version"`:
			dst = &ci.Version
		default:
			return
		}
		if val[0] != '"' {
			ok = false
			return
		}
		*dst = unquote(val)
	})
	return ci, ok
}

// eachMember calls fn with the key (a JSON string token, quotes included) and the value of every
// top-level member of the valid JSON object obj.
func eachMember(obj []byte, fn func(key, val []byte)) {
	n := len(obj)
	i := skipSpace(obj, 1)
	for i < n && obj[i] == '"' {
		ks := i
		i = skipString(obj, i)
		key := obj[ks:i]
		i = skipSpace(obj, i)
		i = skipSpace(obj, i+1) // ':'
		vs := i
		i = skipValue(obj, i)
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(strconv.Quote(unquote(key)))
		}
		fn(key, obj[vs:i])
		i = skipSpace(obj, i)
		if i < n && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

// isEmptyObject reports whether raw is {} (with any white space inside).
func isEmptyObject(raw []byte) bool {
	raw = trimSpace(raw)
	return len(raw) >= 2 && raw[0] == '{' && len(trimSpace(raw[1:len(raw)-1])) == 0
}

// CheckVersion returns nil when the envelope's version is served statelessly, and otherwise the
// [CodeUnsupportedProtocolVersion] error to answer with. A legacy version in an envelope is
// unsupported too: the legacy revisions are reached through initialize.
func (e *Envelope) CheckVersion() *WireError {
	if IsModernVersion(e.ProtocolVersion) {
		return nil
	}
	return ErrUnsupportedVersion(e.ProtocolVersion)
}

// IsModernOnlyMethod reports whether method exists in the modern revision only, so that a
// request for it is modern even without an envelope (and then fails for the lack of one).
func IsModernOnlyMethod(method string) bool {
	return method == MethodServerDiscover || method == MethodSubscriptionsListen || strings.HasPrefix(method, "tasks/")
}

// IsRemovedMethod reports whether method was removed by the modern revision: such a request
// made in the modern era is answered with [CodeMethodNotFound].
func IsRemovedMethod(method string) bool {
	switch method {
	case MethodInitialize, MethodPing, MethodLoggingSetLevel, MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		return true
	}
	return false
}

// DiscoverResult is the result of [MethodServerDiscover]. resultType, the cache hints and
// serverInfo in _meta are added by the encoder of modern results ([Annotation]).
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// InputRequest is one request for input in an input_required result: an elicitation, a
// sampling request or a roots listing, as a method and its params, without jsonrpc or id.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredResult is the result that asks the client to fulfil InputRequests and retry the
// request with a new id, the answers in inputResponses and RequestState echoed byte for byte.
// resultType and _meta are added by the encoder of modern results.
type InputRequiredResult struct {
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// InputParams are the members of a retried request that carry the client's answers: the
// answers by key (each kept raw) and the request state echoed from the input_required result.
type InputParams struct {
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   *string         `json:"requestState,omitempty"`
}

// ReadInputResponses reads the inputResponses member of a retried request: absent (nil, nil),
// or an object whose every value is an object. Anything else (null, an array, a value that is
// not an object) is a [CodeInvalidParams] error naming the key.
func ReadInputResponses(raw json.RawMessage) (map[string]json.RawMessage, *WireError) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !declared(raw) {
		return nil, ErrInvalidParams("inputResponses must be an object of responses by key")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, ErrInvalidParams("inputResponses must be an object of responses by key")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !declared(m[k]) {
			return nil, ErrInvalidParams("inputResponses[%q] must be a result object", k)
		}
	}
	return m, nil
}

// ListenFilter says which notifications a listen stream carries.
type ListenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs are the tasks whose changes the stream carries (notifications/tasks); the tasks
	// extension ([ExtensionTasks]).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// ListenParams are the params of [MethodSubscriptionsListen].
type ListenParams struct {
	Notifications *ListenFilter `json:"notifications"`
}

// ListenAcknowledgedParams are the params of [MethodSubscriptionsAcknowledged]: the filter
// honoured, and the listen request's id in _meta.
type ListenAcknowledgedParams struct {
	Meta          json.RawMessage `json:"_meta"`
	Notifications ListenFilter    `json:"notifications"`
}

// SubscriptionMeta returns the _meta object of a notification delivered on the listen stream
// opened by the request id: {"io.modelcontextprotocol/subscriptionId": id}, the id with its
// JSON type.
func SubscriptionMeta(id ID) json.RawMessage {
	b := make([]byte, 0, len(MetaSubscriptionID)+len(id.raw)+8)
	b = append(b, `{"`...)
	b = append(b, MetaSubscriptionID...)
	b = append(b, `":`...)
	b = append(b, id.String()...)
	return append(b, '}')
}
