package upstream

import (
	"encoding/json"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/protocol"
)

// maxPages bounds the pages read of one list, against an upstream whose cursors never end.
const maxPages = 1000

// listJob is one listing of the upstream's components: each list the upstream declares, page by
// page.
type listJob struct {
	lists   *Lists
	waiting int
}

// list (re)lists the upstream's components; a listing asked for while one runs is done again
// when it ends, so the last change is always seen.
func (a *upstreamActor) list() {
	if a.phase != phaseReady {
		return
	}
	if a.listing != nil {
		a.relist = true
		return
	}
	job := &listJob{lists: &Lists{Capabilities: a.caps, Version: a.version, ServerInfo: a.info}}
	a.listing = job
	if a.caps.Tools != nil {
		job.waiting++
		a.page(job, protocol.MethodToolsList, "", 0, func(res json.RawMessage) (string, error) {
			var r struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			err := json.Unmarshal(res, &r)
			job.lists.Tools = append(job.lists.Tools, r.Tools...)
			return r.NextCursor, err
		})
	}
	if a.caps.Resources != nil {
		job.waiting += 2
		a.page(job, protocol.MethodResourcesList, "", 0, func(res json.RawMessage) (string, error) {
			var r struct {
				Resources  []protocol.Resource `json:"resources"`
				NextCursor string              `json:"nextCursor"`
			}
			err := json.Unmarshal(res, &r)
			job.lists.Resources = append(job.lists.Resources, r.Resources...)
			return r.NextCursor, err
		})
		a.page(job, protocol.MethodResourcesTemplatesList, "", 0, func(res json.RawMessage) (string, error) {
			var r struct {
				Templates  []protocol.ResourceTemplate `json:"resourceTemplates"`
				NextCursor string                      `json:"nextCursor"`
			}
			err := json.Unmarshal(res, &r)
			job.lists.Templates = append(job.lists.Templates, r.Templates...)
			return r.NextCursor, err
		})
	}
	if a.caps.Prompts != nil {
		job.waiting++
		a.page(job, protocol.MethodPromptsList, "", 0, func(res json.RawMessage) (string, error) {
			var r struct {
				Prompts    []protocol.Prompt `json:"prompts"`
				NextCursor string            `json:"nextCursor"`
			}
			err := json.Unmarshal(res, &r)
			job.lists.Prompts = append(job.lists.Prompts, r.Prompts...)
			return r.NextCursor, err
		})
	}
	if job.waiting == 0 {
		a.listed(job)
	}
}

// page asks for one page of a list; read takes it in and returns the next cursor.
func (a *upstreamActor) page(job *listJob, method, cursor string, n int, read func(json.RawMessage) (string, error)) {
	var params json.RawMessage
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	a.request(method, params, a.modern, func(res json.RawMessage, werr *protocol.WireError) {
		if a.listing != job {
			return // the connection was lost since
		}
		next := ""
		if werr != nil {
			a.u.log.Warn("upstream refused to list its components", zap.String("method", method), zap.Error(werr))
		} else if nc, err := read(res); err != nil {
			a.u.log.Warn("upstream sent a malformed list", zap.String("method", method), zap.Error(err))
		} else {
			next = nc
		}
		if next != "" && n+1 < maxPages {
			a.page(job, method, next, n+1, read)
			return
		}
		job.waiting--
		if job.waiting == 0 {
			a.listed(job)
		}
	})
}

func (a *upstreamActor) listed(job *listJob) {
	a.listing = nil
	a.down = false
	a.u.cfg.Events.Listed(job.lists)
	if a.relist {
		a.relist = false
		a.list()
	}
}

// listen opens, on a modern connection, the subscription that brings the upstream's list
// changes; a legacy upstream sends them unasked.
func (a *upstreamActor) listen() {
	if !a.modern {
		return
	}
	n := map[string]bool{}
	if a.caps.Tools != nil && a.caps.Tools.ListChanged {
		n["toolsListChanged"] = true
	}
	if a.caps.Prompts != nil && a.caps.Prompts.ListChanged {
		n["promptsListChanged"] = true
	}
	if a.caps.Resources != nil && a.caps.Resources.ListChanged {
		n["resourcesListChanged"] = true
	}
	if len(n) == 0 {
		return
	}
	params, _ := json.Marshal(map[string]any{"notifications": n})
	gen := a.gen
	a.listenID = a.request(protocol.MethodSubscriptionsListen, params, true, func(_ json.RawMessage, werr *protocol.WireError) {
		if gen != a.gen || a.phase != phaseReady {
			return
		}
		// The upstream ended the subscription: the lists may have changed meanwhile.
		if werr != nil {
			a.u.log.Debug("upstream ended the list-change subscription", zap.Error(werr))
			return
		}
		a.list()
		a.listen()
	})
}
