package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteJSON writes the result as one JSON object.
func (r *DedupResult) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// dedupColumns are the columns of the text table and the CSV, with a
// point's cells.
var dedupColumns = []struct {
	text, csv string
	cell      func(p DedupPoint) string
}{
	{"backend", "backend", func(p DedupPoint) string { return p.Backend }},
	{"entries", "entries", func(p DedupPoint) string { return reachedCount(p) }},
	{"B/entry", "bytes_per_entry", func(p DedupPoint) string { return f1(p.BytesPerEntry) }},
	{"MEMORY USAGE/entry", "memory_usage_per_entry", func(p DedupPoint) string { return redisOnly(p, f1(p.KeyBytesPerEntry)) }},
	{"keys", "keys", func(p DedupPoint) string { return redisOnly(p, strconv.FormatInt(p.Keys, 10)) }},
	{"fill s", "fill_seconds", func(p DedupPoint) string { return f1(p.FillSeconds) }},
	{"fill/s", "fill_entries_per_second", func(p DedupPoint) string { return f0(p.FillPerSec) }},
	{"save/s (last)", "save_entries_per_second", func(p DedupPoint) string { return f0(p.SavePerSec) }},
	{"save p50 ms", "save_batch_p50_ms", func(p DedupPoint) string { return f2(p.SaveP50) }},
	{"save p99 ms", "save_batch_p99_ms", func(p DedupPoint) string { return f2(p.SaveP99) }},
	{"lookups/s", "lookups_per_second", func(p DedupPoint) string { return f0(p.LookupsPerSec) }},
	{"lookup p50 ms", "lookup_batch_p50_ms", func(p DedupPoint) string { return f2(p.LookupP50) }},
	{"lookup p99 ms", "lookup_batch_p99_ms", func(p DedupPoint) string { return f2(p.LookupP99) }},
	{"hits found", "hits_found", func(p DedupPoint) string { return fmt.Sprintf("%d/%d", p.HitsFound, p.HitsAsked) }},
	{"false hits", "false_hits", func(p DedupPoint) string { return strconv.FormatInt(p.FalseHits, 10) }},
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func reachedCount(p DedupPoint) string {
	if p.Reached {
		return FormatCount(p.Entries)
	}
	return fmt.Sprintf("%d (of %s)", p.Entries, FormatCount(p.Target))
}

func redisOnly(p DedupPoint, s string) string {
	if p.Backend != DedupRedis {
		return "-"
	}
	return s
}

// WriteText writes the setup, a table with a row per backend and size,
// and what --max-time stopped.
func (r *DedupResult) WriteText(w io.Writer) error {
	s := r.Setup
	if _, err := fmt.Fprintf(w, "dedup store filled with random sha1 digests, URLs of %.0f characters on average, <urn:uuid:> ids, WARC/1.0 dates\n"+
		"fill: batches of %d, %d in flight; the last ones before each size one at a time (as the Index's flusher sends them), timed\n"+
		"lookups: %d keys per size, %.0f%% hits (each at the URL it was saved with), batches of 1..%d keys, %d in flight; Redis URL table %s\n"+
		"B/entry: redis used_memory delta (after a settle), embedded bbolt file size; MEMORY USAGE/entry: mean of a key sample x keys / entries\n\n",
		r.URLMeanLen, s.SaveBatch, s.InFlight, s.Lookups, s.HitRatio*100, s.MaxLookupBatch, s.Lookupers, onOff(s.URLTable)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, c := range dedupColumns {
		sep := "\t"
		if i == len(dedupColumns)-1 {
			sep = "\t\n"
		}
		fmt.Fprint(tw, c.text+sep)
	}
	for _, p := range r.Points {
		for i, c := range dedupColumns {
			sep := "\t"
			if i == len(dedupColumns)-1 {
				sep = "\t\n"
			}
			fmt.Fprint(tw, c.cell(p)+sep)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range r.Stopped {
		if _, err := fmt.Fprintln(w, "stopped: "+st); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "elapsed %.0fs\n", r.ElapsedSec)
	return err
}

// WriteCSV writes a header and a row per backend and size, in the units
// of the JSON form.
func (r *DedupResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := make([]string, 0, len(dedupColumns)+2)
	for _, c := range dedupColumns {
		head = append(head, c.csv)
	}
	head = append(head, "hits_asked", "target_entries", "reached")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, p := range r.Points {
		row := make([]string, 0, len(head))
		for _, c := range dedupColumns {
			row = append(row, c.cell(p))
		}
		row[1] = strconv.FormatInt(p.Entries, 10)
		row[len(row)-2] = strconv.FormatInt(p.HitsFound, 10)
		row = append(row, strconv.FormatInt(p.HitsAsked, 10), strconv.FormatInt(p.Target, 10), strconv.FormatBool(p.Reached))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
