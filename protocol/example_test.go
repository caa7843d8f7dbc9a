package protocol_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgrain/toolgrain/protocol"
)

func ExampleDecode() {
	m, werr := protocol.Decode([]byte(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if werr != nil {
		fmt.Printf("%s\n", protocol.EncodeError(protocol.ID{}, werr))
		return
	}
	reply, _ := protocol.EncodeResult(m.ID, struct{}{})
	fmt.Printf("%s\n", reply)

	// A malformed message whose id can be read is answered with that id.
	m, werr = protocol.Decode([]byte(`{"jsonrpc":"2.0","id":"a1","method":42}`))
	fmt.Printf("%s\n", protocol.EncodeError(m.ID, werr))
	// Output:
	// {"jsonrpc":"2.0","id":0,"result":{}}
	// {"jsonrpc":"2.0","id":"a1","error":{"code":-32600,"message":"Invalid Request: method must be a string"}}
}

func ExampleNegotiateVersion() {
	fmt.Println(protocol.NegotiateVersion("2025-06-18"))
	fmt.Println(protocol.NegotiateVersion("2024-11-05"))
	fmt.Println(protocol.NegotiateVersion("2024-10-07")) // not served: the latest instead
	// Output:
	// 2025-06-18
	// 2024-11-05
	// 2025-11-25
}

// Example_stdio serves pings over stdio framing: a LineReader for input, a
// StreamWriter for output.
func Example_stdio() {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n" +
		`not json` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	out := protocol.NewStreamWriter(os.Stdout, nil)
	r := protocol.NewLineReader(in, 0)
	for {
		line, err := r.Next()
		var tooLarge *protocol.MessageTooLargeError
		switch {
		case errors.Is(err, io.EOF):
			_ = out.Close()
			return
		case errors.As(err, &tooLarge):
			out.Send(protocol.EncodeError(protocol.ID{}, protocol.ErrInvalidRequest("%v", err)))
			continue
		case err != nil:
			_ = out.Close()
			return
		}
		m, werr := protocol.Decode(line)
		switch {
		case werr != nil:
			var id protocol.ID
			if m != nil {
				id = m.ID
			}
			out.Send(protocol.EncodeError(id, werr))
		case m.IsNotification():
			// Notifications get no reply.
		case m.Method == protocol.MethodPing:
			frame, _ := protocol.EncodeResult(m.ID, struct{}{})
			out.Send(frame)
		default:
			out.Send(protocol.EncodeError(m.ID, protocol.ErrMethodNotFound(m.Method)))
		}
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 2"}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: tools/list"}}
}
