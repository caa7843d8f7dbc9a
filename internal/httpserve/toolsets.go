package httpserve

import (
	"net/http"
	"strings"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/visibility"
)

// Toolsets: a request narrows its view to the components with one of some tags (package
// visibility) by the X-MCP-Toolsets header, or by an endpoint path that ends in /t/TAG[,TAG...]
// for clients that cannot set headers. The engine does the narrowing; the transport reads the
// tags and hands them over in the request's context (engine.WithToolsets).

// toolsetsSuffix is what precedes the tags at the end of a toolsets path.
const toolsetsSuffix = "/" + visibility.ToolsetsPath + "/"

// requestToolsets returns the toolsets r narrows its view to: those of the header (all its
// values), those of the path, or, with both, the tags both name; nil when r names none (an
// empty list is none). A tag that breaks the tag syntax is an error.
func requestToolsets(r *http.Request) ([]string, error) {
	var fromHeader, fromPath []string
	if values := r.Header.Values(visibility.ToolsetsHeader); len(values) > 0 {
		list, err := tags.Parse(strings.Join(values, ","))
		if err != nil {
			return nil, err
		}
		if len(list) > 0 {
			fromHeader = list
		}
	}
	if seg, ok := toolsetsSegment(r.URL.Path); ok {
		list, err := tags.Parse(seg)
		if err != nil {
			return nil, err
		}
		if len(list) > 0 {
			fromPath = list
		}
	}
	switch {
	case fromHeader == nil:
		return fromPath, nil
	case fromPath == nil:
		return fromHeader, nil
	}
	both := []string{}
	for _, t := range fromHeader {
		for _, u := range fromPath {
			if t == u {
				both = append(both, t)
			}
		}
	}
	return both, nil
}

// toolsetsSegment returns the last segment of a path that ends in /t/SEGMENT.
func toolsetsSegment(path string) (string, bool) {
	i := strings.LastIndex(path, toolsetsSuffix)
	if i < 0 || strings.Contains(path[i+len(toolsetsSuffix):], "/") {
		return "", false
	}
	return path[i+len(toolsetsSuffix):], true
}

// endpointPath returns path without the toolsets it ends with, if any: the endpoint a toolsets
// path narrows, whose URI is the resource tokens are issued for.
func endpointPath(path string) string {
	if _, ok := toolsetsSegment(path); ok {
		return path[:strings.LastIndex(path, toolsetsSuffix)]
	}
	return path
}

// withToolsets returns r with the toolsets it names in its context, or answers 400 and returns
// nil when they break the tag syntax.
func withToolsets(w http.ResponseWriter, r *http.Request) *http.Request {
	list, err := requestToolsets(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request", "toolsets: "+err.Error()))
		return nil
	}
	if list == nil {
		return r
	}
	return r.WithContext(engine.WithToolsets(r.Context(), list))
}
