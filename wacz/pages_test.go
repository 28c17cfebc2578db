package wacz

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindTitle: the title a browser shows in its tab.
func TestFindTitle(t *testing.T) {
	tests := []struct {
		name, html, contentType, want string
	}{
		{"plain", "<html><head><title>Hello</title></head></html>", "text/html", "Hello"},
		{"entities and white space", "<title>\n  A &amp; B&nbsp;&lt;C&gt; &#x263A;\t</title>", "text/html", "A & B <C> ☺"},
		{"upper case, attributes", `<HTML><HEAD><TITLE lang="en">Upper</TITLE>`, "text/html", "Upper"},
		{"no title", "<html><body>text</body></html>", "text/html", ""},
		{"empty title", "<title>  </title>", "text/html", ""},
		{"svg title first", "<svg><title>icon</title></svg><title>Page</title>", "text/html", "Page"},
		{"title in a script", `<script>document.write("<title>no</title>")</script><title>Yes</title>`, "text/html", "Yes"},
		{"title in a comment", `<!-- <title>no</title> --><title>Yes</title>`, "text/html", "Yes"},
		{"markup in the title is text", "<title><b>bold</b></title>", "text/html", "<b>bold</b>"},
		{"charset from Content-Type", "<title>Caf\xe9</title>", "text/html; charset=windows-1252", "Café"},
		{"charset from meta", "<meta charset=\"iso-8859-1\"><title>Cr\xe8me</title>", "text/html", "Crème"},
		{"UTF-8 by default", "<title>Caf\xc3\xa9</title>", "text/html", "Café"},
		{"unclosed title", "<title>Cut short", "text/html", "Cut short"},
		{"after a long head", "<style>" + strings.Repeat("a{}", 50000) + "</style><title>Late</title>", "text/html", "Late"},
		{"past the scan", "<style>" + strings.Repeat("a{}", titleScan/3) + "</style><title>Too late</title>", "text/html", ""},
		{"very long title", "<title>" + strings.Repeat("é", maxTitle) + "</title>", "text/html", strings.Repeat("é", maxTitle/2)},
		{"cut in a character", "<title>x" + strings.Repeat("é", maxTitle) + "</title>", "text/html", "x" + strings.Repeat("é", maxTitle/2-1) + "\uFFFD"},
		{"invalid UTF-8", "<title>a\xffb</title>", "text/html; charset=utf-8", "a\uFFFDb"},
		{"undeclared, not UTF-8: windows-1252, as browsers guess", "<title>a\xffb</title>", "text/html", "aÿb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findTitle(bufio.NewReader(strings.NewReader(tt.html)), tt.contentType)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestIsHTML(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/html": true, "TEXT/HTML; charset=utf-8": true, " application/xhtml+xml ": true,
		"text/plain": false, "": false, "text/htmlx": false, "image/svg+xml": false,
	} {
		require.Equal(t, want, isHTML(ct), ct)
	}
}
