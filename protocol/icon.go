package protocol

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Icon is an image a client may show for the server (its serverInfo), a tool, a resource, a
// resource template or a prompt (MCP 2025-11-25, SEP-973). Src is required; the rest is
// optional. [CheckIcons] says what the engine accepts, and the revisions before 2025-11-25
// get no icons at all ([FeatureIcons]).
type Icon struct {
	// Src is the image: an https: URL, or a data: URI with base64-encoded image data
	// ("data:image/png;base64,...").
	Src string `json:"src"`
	// MimeType, when set, is the image's media type, an image type ("image/png",
	// "image/svg+xml"), for a source whose own type is missing or generic.
	MimeType string `json:"mimeType,omitempty"`
	// Sizes are the sizes the image can be used at, each "WxH" in pixels ("48x48") or "any"
	// for a scalable one. Nil means any size.
	Sizes []string `json:"sizes,omitempty"`
	// Theme is the background the icon is designed for: [ThemeLight] or [ThemeDark]. Empty
	// means any.
	Theme string `json:"theme,omitempty"`
}

// The themes of [Icon].Theme.
const (
	ThemeLight = "light"
	ThemeDark  = "dark"
)

// IconError reports an icon the engine does not serve, found by [CheckIcons] at construction.
// Callers find it with errors.As.
type IconError struct {
	// Index is the icon's place in its list.
	Index int
	// Reason says which rule it breaks.
	Reason string
}

// Error returns `icon <index>: <reason>`.
func (e *IconError) Error() string { return "icon " + strconv.Itoa(e.Index) + ": " + e.Reason }

// CheckIcons returns an [*IconError] for the first icon of icons that breaks a rule, or nil:
// Src must be an https: URL with a host or a data: URI of base64-encoded data whose media type
// is an image type (the specification: "Ensure that the icon URI is either a HTTPS or data:
// URI", and clients "MUST reject icon URIs that use unsafe schemes"); MimeType, when set, must
// be an image type; each of Sizes must be "WxH" (two positive integers, as "48x48") or "any";
// Theme must be empty, "light" or "dark".
func CheckIcons(icons []Icon) error {
	for i, ic := range icons {
		if reason := checkIcon(&ic); reason != "" {
			return &IconError{Index: i, Reason: reason}
		}
	}
	return nil
}

func checkIcon(ic *Icon) string {
	if reason := checkIconSrc(ic.Src); reason != "" {
		return reason
	}
	if ic.MimeType != "" && !isImageType(ic.MimeType) {
		return fmt.Sprintf("mimeType %q is not an image type (image/...)", ic.MimeType)
	}
	for _, s := range ic.Sizes {
		if !validIconSize(s) {
			return fmt.Sprintf("size %q is neither WxH (as 48x48) nor any", s)
		}
	}
	if ic.Theme != "" && ic.Theme != ThemeLight && ic.Theme != ThemeDark {
		return fmt.Sprintf("theme %q is neither %q nor %q", ic.Theme, ThemeLight, ThemeDark)
	}
	return ""
}

func checkIconSrc(src string) string {
	if src == "" {
		return "src is empty"
	}
	scheme, rest, _ := strings.Cut(src, ":")
	switch strings.ToLower(scheme) {
	case "https":
		u, err := url.Parse(src)
		if err != nil || u.Host == "" {
			return fmt.Sprintf("src %q is not an https: URL with a host", src)
		}
		return ""
	case "data":
		// data:[<media type>][;base64],<data> (RFC 2397); an icon's is an image, in base64.
		head, data, ok := strings.Cut(rest, ",")
		mt, enc := head, ""
		if i := strings.LastIndexByte(head, ';'); i >= 0 {
			mt, enc = head[:i], head[i+1:]
		}
		switch {
		case !ok || !strings.EqualFold(enc, "base64"):
			return "src: a data: URI must hold base64 data (data:image/png;base64,...)"
		case !isImageType(mt):
			return fmt.Sprintf("src: the media type %q of the data: URI is not an image type (image/...)", mt)
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			if _, err := base64.RawStdEncoding.DecodeString(data); err != nil {
				return "src: the data of the data: URI is not valid base64"
			}
		}
		return ""
	}
	return fmt.Sprintf("src %q is not an https: or data: URI", truncate(src, 64))
}

// isImageType reports whether mt is a media type of the image top-level type.
func isImageType(mt string) bool {
	t, _, err := mime.ParseMediaType(mt)
	top, sub, ok := strings.Cut(t, "/")
	return err == nil && ok && top == "image" && sub != ""
}

// validIconSize reports whether s is "any" or WxH with two positive decimal integers.
func validIconSize(s string) bool {
	if s == "any" {
		return true
	}
	w, h, ok := strings.Cut(s, "x")
	return ok && positiveInt(w) && positiveInt(h)
}

func positiveInt(s string) bool {
	if s == "" || s[0] == '0' || len(s) > 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// CloneIcons returns a copy of icons that shares no memory with it (nil for none).
func CloneIcons(icons []Icon) []Icon {
	if len(icons) == 0 {
		return nil
	}
	out := slices.Clone(icons)
	for i := range out {
		out[i].Sizes = slices.Clone(out[i].Sizes)
	}
	return out
}
