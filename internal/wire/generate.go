// Package wire holds the protobuf messages the members of a cluster exchange (see
// envelope.proto). The generated envelope.pb.go is committed: building needs no protoc.
package wire

// protoc 3.21 (Debian protobuf-compiler) and protoc-gen-go v1.36.12, the version of
// google.golang.org/protobuf in go.mod:
//go:generate protoc --go_out=. --go_opt=paths=source_relative envelope.proto
