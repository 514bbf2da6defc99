"""Sweeps over problem grids: cells, a resumable store of their rows, executors (local or
Ray), and the IFCA Fig. 2 protocol with its certificate (`cflbounds sweep ifca-fig2`)."""
