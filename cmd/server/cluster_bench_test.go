package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkClusterHop measures what a cross-member hop costs a legacy session's request: a ping
// sent to the session's home ("local") and to another member, which forwards it to the home over
// remote and streams the answer back ("forwarded"). It reports the median and p99 round trip in
// µs, measured by the client over loopback HTTP, with 3 member processes on this machine.
func BenchmarkClusterHop(b *testing.B) {
	c := startCluster(b, 3)
	sid, _ := c.initialize(c.members[0].base)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	for _, bc := range []struct {
		name  string
		entry int
	}{{"local", 0}, {"forwarded", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			b.Logf("ping on a session homed on member 0, sent to member %d", bc.entry)
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				status := ping(b, client, c.members[bc.entry].base, sid, i)
				lat = append(lat, time.Since(start))
				if status != 200 {
					b.Fatalf("ping: status %d", status)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkClusterThroughput measures modern (stateless) echo calls per second from parallel
// clients, served by one member or spread round robin over three.
func BenchmarkClusterThroughput(b *testing.B) {
	c := startCluster(b, 3)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, members := range []int{1, 3} {
		b.Run(strconv.Itoa(members)+"-members", func(b *testing.B) {
			b.Logf("modern echo calls from 8×GOMAXPROCS parallel clients over %d member(s)", members)
			var next atomic.Int64
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := c.members[int(next.Add(1))%members]
					resp, err := c.doWith(context.Background(), client, m.base, request{modern: "tools/call", name: "echo", body: body})
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

func ping(b *testing.B, client *http.Client, base, sid string, i int) int {
	tc := &testCluster{t: b}
	resp, err := tc.doWith(context.Background(), client, base, request{session: sid, body: `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
