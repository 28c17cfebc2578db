package bench

import (
	"math"
	"strconv"
	"strings"
)

// niceTicks returns axis ticks from 0 to the first tick at or above maxV,
// a step of 1, 2 or 5 × 10^n apart: the smallest such step that needs at
// most maxSteps steps, so that a reader can interpolate between round
// values. A maxV of 0 or less (nothing measured) gets the axis 0 to 1.
func niceTicks(maxV float64, maxSteps int) []float64 {
	if maxV <= 0 || math.IsNaN(maxV) || math.IsInf(maxV, 0) {
		maxV = 1
	}
	maxSteps = max(maxSteps, 1)
	step := niceStep(maxV, maxSteps)
	n := int(math.Ceil(maxV/step - 1e-9))
	ticks := make([]float64, 0, n+1)
	for i := range n + 1 {
		// Multiplying, not adding, keeps 0.1-steps free of drift.
		ticks = append(ticks, roundTo(float64(i)*step, step))
	}
	return ticks
}

// niceStep is the smallest 1-2-5 × 10^n step that covers maxV in at most
// maxSteps steps.
func niceStep(maxV float64, maxSteps int) float64 {
	raw := maxV / float64(maxSteps)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * mag; s*float64(maxSteps) >= maxV*(1-1e-12) {
			return s
		}
	}
	return 10 * mag
}

// roundTo rounds v to the decimals step has, undoing float noise (0.30000000000000004).
func roundTo(v, step float64) float64 {
	p := math.Pow(10, float64(stepDecimals(step)))
	return math.Round(v*p) / p
}

// stepDecimals is how many decimals a tick label needs for a step: 0 for
// 1 and up, 1 for 0.5, 2 for 0.02.
func stepDecimals(step float64) int {
	if step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

// formatTick formats a tick value as the step asks, thousands grouped.
func formatTick(v, step float64) string {
	return groupThousands(v, stepDecimals(step))
}

// groupThousands formats v with prec decimals and commas between groups of
// three digits: 33105 → "33,105", 1234.5 → "1,234.5".
func groupThousands(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, d := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}
