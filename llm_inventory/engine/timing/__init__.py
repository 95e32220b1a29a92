"""The calibrated time model: what a step costs, what a server does under load.

`profile` (the work and bytes of one split), `step` (one engine step and one round),
`serving` (batch 1, static batches, a request rate, a closed loop, offline), `calibration`
(the fitted constants, shipped as package data) and `measured` (published rows replayed).
"""
