package protocol

import "encoding/json"

// JSON-RPC batches (MCP 2025-03-26 only): "MCP implementations MAY support sending JSON-RPC
// batches, but MUST support receiving JSON-RPC batches"; 2025-06-18 removed them. Whether a
// batch is accepted is the session's revision's to say ([FeatureBatches]), so the codec reads
// one either way ([DecodeInput]) and the engine answers it, or refuses it with
// [ErrBatchUnsupported].

// BatchItem is one element of a JSON-RPC batch as [Decode] reads it: its message, or the error
// that answers it (with the message, whose ID is set, when the id could be read).
type BatchItem struct {
	Msg *Message
	Err *WireError
}

// ErrBatchUnsupported is the error, with id null, that refuses a batch where the revision has
// none: [CodeInvalidRequest] "batches are not supported".
func ErrBatchUnsupported() *WireError { return ErrInvalidRequest("batches are not supported") }

// ErrEmptyBatch is the error, with id null, that answers an empty batch ([]), as JSON-RPC 2.0
// says: one Invalid Request error, not an array.
func ErrEmptyBatch() *WireError { return ErrInvalidRequest("empty batch") }

// MaxBatchLength bounds the elements of one batch: a longer one is refused whole with
// [ErrBatchTooLong], so that what one message costs (the requests it starts, the responses it
// asks for) stays bounded as for a single message.
const MaxBatchLength = 1000

// ErrBatchTooLong is the error, with id null, that refuses a batch of more than
// [MaxBatchLength] elements.
func ErrBatchTooLong() *WireError {
	return ErrInvalidRequest("a batch of more than %d messages", MaxBatchLength)
}

// DecodeInput parses one unit of a client's input (a stdio line, an HTTP body): a message, as
// [Decode] does, or a JSON-RPC batch (a JSON array), each of whose elements is decoded by
// Decode into a [BatchItem]. A batch is returned non-nil, empty for []; of a batch longer than
// [MaxBatchLength] only the first MaxBatchLength+1 elements are decoded and returned, which
// says it is too long. Input that is not valid JSON is [CodeParseError], as for Decode.
func DecodeInput(data []byte) (*Message, []BatchItem, *WireError) {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '[' {
		m, werr := Decode(data)
		return m, nil, werr
	}
	if !json.Valid(data) {
		return nil, nil, parseError(data)
	}
	items := make([]BatchItem, 0, 4)
	// data is valid JSON, so the walk needs no error checks.
	i = skipSpace(data, i+1)
	for data[i] != ']' && len(items) <= MaxBatchLength {
		vs := i
		i = skipValue(data, i)
		m, werr := Decode(data[vs:i])
		items = append(items, BatchItem{Msg: m, Err: werr})
		i = skipSpace(data, i)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return nil, items, nil
}

// EncodeBatch encodes the responses frames (each encoded by this package) as one JSON-RPC
// batch response: a JSON array of them, in order.
func EncodeBatch(frames [][]byte) []byte {
	n := 2
	for _, f := range frames {
		n += len(f) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, f := range frames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f...)
	}
	return append(b, ']')
}
