package writer

import (
	"path/filepath"
	"regexp"
	"strings"
)

// PrefixOf reads the {prefix} back from a WARC file name the template
// made (also a -N or -recovered-N one), or "" when the template has no
// {prefix} or the name does not fit it. Completion events name the prefix
// of each file shipped, also for files closed by an earlier run.
func PrefixOf(template, name string) string {
	segs, err := parseTemplate(template)
	if err != nil {
		return ""
	}
	var re strings.Builder
	re.WriteString("^")
	hasPrefix := false
	for _, s := range segs {
		switch s.kind {
		case phLiteral:
			re.WriteString(regexp.QuoteMeta(s.literal))
		case phPrefix:
			if hasPrefix {
				re.WriteString(`.+`) // a second {prefix} is the same: not captured
				continue
			}
			hasPrefix = true
			re.WriteString(`(.+)`)
		case phTimestamp14:
			re.WriteString(`\d{14}`)
		case phTimestamp17:
			re.WriteString(`\d{17}`)
		case phSerialno:
			re.WriteString(`\d{5,}`)
		case phRandomtoken:
			re.WriteString(`[a-z0-9]{8}`)
		case phPort:
			re.WriteString(`\d+`)
		default: // host names
			re.WriteString(`.+?`)
		}
	}
	re.WriteString(`(?:-\d+)?(?:-recovered-\d+)?\.warc(?:\.gz|\.zst)?$`)
	if !hasPrefix {
		return ""
	}
	m := regexp.MustCompile(re.String()).FindStringSubmatch(filepath.Base(name))
	if m == nil {
		return ""
	}
	return m[1]
}
