package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "2m", want: 2 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "60", want: 60 * time.Second},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: ".5", want: 500 * time.Millisecond},
		{in: "5.", want: 5 * time.Second},
		{in: "0.000000001", want: time.Nanosecond},
		{in: "300", want: 5 * time.Minute},
		{in: " 30 ", want: 30 * time.Second},
		{in: "+5", want: 5 * time.Second},
		{in: "-0", want: 0},
		{in: "", wantErr: "not a duration"},
		{in: "soon", wantErr: "not a duration"},
		{in: "-1", wantErr: "negative"},
		{in: "-5m", wantErr: "negative"},
		{in: "1d", wantErr: "not a duration"},
		{in: "1e3", wantErr: "not a duration"},
		{in: "inf", wantErr: "not a duration"},
		{in: "NaN", wantErr: "not a duration"},
		{in: "0x10", wantErr: "not a duration"},
		{in: "1.2.3", wantErr: "not a duration"},
		{in: "10 s", wantErr: "not a duration"},
		{in: "99999999999", wantErr: "too large"}, // overflows time.Duration
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseDuration(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1", want: 1},
		{in: "1000000000", want: 1_000_000_000},
		{in: "7B", want: 7},
		{in: "1KB", want: 1000},
		{in: "1kb", want: 1000},
		{in: "1KiB", want: 1024},
		{in: "1kib", want: 1024},
		{in: "512KiB", want: 512 * 1024},
		{in: "4MiB", want: 4 << 20},
		{in: "100MB", want: 100_000_000},
		{in: "1GB", want: 1_000_000_000},
		{in: "1GiB", want: 1 << 30},
		{in: "2TB", want: 2_000_000_000_000},
		{in: "1TiB", want: 1 << 40},
		{in: "1.5GiB", want: 3 << 29},
		{in: "0.5KB", want: 500},
		{in: "1.5", wantErr: "whole number"},
		{in: "0.0001KB", wantErr: "whole number"},
		{in: "10 MB", want: 10_000_000},
		{in: " 42 ", want: 42},
		{in: "9223372036854775807", want: 1<<63 - 1},
		{in: "9223372036854775808", wantErr: "too large"},
		{in: "8388608TiB", wantErr: "too large"},
		{in: "", wantErr: "not a size"},
		{in: "KB", wantErr: "not a size"},
		{in: "-1", wantErr: "negative"},
		{in: "-1KB", wantErr: "negative"},
		{in: "+5", wantErr: "not a size"},
		{in: "1..5", wantErr: "not a size"},
		{in: "1e9", wantErr: "unknown unit"},
		{in: "0x10", wantErr: "unknown unit"},
		{in: "1 2", wantErr: "unknown unit"},
		{in: "5EiB", wantErr: "unknown unit"},
		{in: "10k", wantErr: `ambiguous unit "k": write 10KiB (powers of 1024) or 10KB (powers of 1000)`},
		{in: "64m", wantErr: "ambiguous unit"},
		{in: "1G", wantErr: "ambiguous unit"},
		{in: "1T", wantErr: "ambiguous unit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{999, "999"},
		{1000, "1KB"},
		{1024, "1KiB"},
		{1024000, "1000KiB"}, // KiB divides too, and is the larger unit
		{4 << 20, "4MiB"},
		{1_000_000_000, "1GB"},
		{1 << 40, "1TiB"},
		{1<<63 - 1, "9223372036854775807"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, formatSize(tt.n))
		back, err := parseSize(tt.want)
		require.NoError(t, err)
		require.Equal(t, tt.n, back)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{2 * time.Minute, "2m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + time.Second, "1h0m1s"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, formatDuration(tt.d))
		back, err := parseDuration(tt.want)
		require.NoError(t, err)
		require.Equal(t, tt.d, back)
	}
}
