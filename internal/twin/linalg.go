package twin

import "math"

// gauss solves a·x = b for a small dense system by Gaussian elimination
// with partial pivoting; ok is false when a is singular.
func gauss(a [][]float64, b []float64) (x []float64, ok bool) {
	n := len(b)
	m := make([][]float64, n)
	for i := range a {
		m[i] = append(append([]float64(nil), a[i]...), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if m[p][c] == 0 || math.IsNaN(m[p][c]) {
			return nil, false
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x = make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := m[r][n]
		for k := r + 1; k < n; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x, true
}

// inverse is a's inverse, column by column; ok is false when a is singular.
func inverse(a [][]float64) (inv [][]float64, ok bool) {
	n := len(a)
	inv = make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for c := range n {
		e := make([]float64, n)
		e[c] = 1
		x, ok := gauss(a, e)
		if !ok {
			return nil, false
		}
		for r := range n {
			inv[r][c] = x[r]
		}
	}
	return inv, true
}

// normal is Jᵀ·J and Jᵀ·r for a Jacobian j (rows: residuals).
func normal(j [][]float64, r []float64) (jtj [][]float64, jtr []float64) {
	p := len(j[0])
	jtj = make([][]float64, p)
	jtr = make([]float64, p)
	for a := range p {
		jtj[a] = make([]float64, p)
		for b := range p {
			for i := range j {
				jtj[a][b] += j[i][a] * j[i][b]
			}
		}
		for i := range j {
			jtr[a] += j[i][a] * r[i]
		}
	}
	return jtj, jtr
}
