package graph

import "slices"

func sortNodes(ns []*Node) {
	slices.SortFunc(ns, func(a, b *Node) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
}
