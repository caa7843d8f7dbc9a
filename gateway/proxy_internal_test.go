package gateway

import "testing"

func TestOnlyReserved(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`: true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}`:                         true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x"},"io.modelcontextprotocol/related":1}`:   true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x"},"trace":"t"}`:                           false,
		`{"trace":"io.modelcontextprotocol/x"}`:                                                     false,
		`{"io.modelcontextprotocol/a":{"b":{"c":"d"}},"e":[1,{"f":"g"}]}`:                           false,
		`{"io.modelcontextprotocol/a":"with \"quote\" and , comma","io.modelcontextprotocol/b":[]}`: true,
	} {
		if got := onlyReserved([]byte(in)); got != want {
			t.Errorf("onlyReserved(%s) = %v, want %v", in, got, want)
		}
	}
}
