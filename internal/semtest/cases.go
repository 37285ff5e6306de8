package semtest

// Cases returns every semantic test case, each a fresh value.
func Cases() []Case {
	return []Case{
		fifoOrder(),
	}
}

// fifoOrder: spawned tasks run in spawn order; Yield sends the task to the tail.
func fifoOrder() Case {
	worker := func(name, tag string) Task {
		return Task{name, []Op{Log(tag + "1"), Yield(), Log(tag + "2")}}
	}
	return Case{
		Program: &Program{Name: "fifo", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Spawn(3, Normal), Log("m1"), Yield(), Log("m2")}},
			worker("A", "a"), worker("B", "b"), worker("C", "c"),
		}},
		Want: []string{
			"main: m1", "A: a1", "B: b1", "C: c1", "main: m2", "main: exit",
			"A: a2", "A: exit", "B: b2", "B: exit", "C: c2", "C: exit",
		},
	}
}
