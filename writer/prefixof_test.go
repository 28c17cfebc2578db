package writer

import "testing"

func TestPrefixOf(t *testing.T) {
	const def = "{prefix}-{timestamp17}-{serialno}-{randomtoken}"
	for _, c := range []struct{ template, name, want string }{
		{def, "WARCPROX-20261204145025954-00000-8lmiiq0f.warc.gz", "WARCPROX"},
		{def, "job-a-b-20261204145025954-00012-8lmiiq0f.warc.zst", "job-a-b"},
		{def, "dir/jobA-20261204145025954-00000-8lmiiq0f-1.warc", "jobA"},
		{def, "jobA-20261204145025954-00000-8lmiiq0f-recovered-2.warc.gz", "jobA"},
		{"{hostname}_{prefix}_{timestamp14}", "host.example_crawl_20261204145025.warc.gz", "crawl"},
		{"{timestamp17}-{serialno}", "20261204145025954-00000.warc.gz", ""},
		{def, "not-a-name.warc.gz", ""},
	} {
		if got := PrefixOf(c.template, c.name); got != c.want {
			t.Errorf("PrefixOf(%q, %q) = %q, want %q", c.template, c.name, got, c.want)
		}
	}
}
