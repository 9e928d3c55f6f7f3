"""The supervision desk: many live sessions, one approval inbox, one audit log.

Plain asyncio, no Textual (as `console.runtime.live`): `desk.Desk` runs the sessions and owns the inbox; the screens
render its snapshots (`view`) and call its async methods. A remote desk (browser operators) speaks the same
`view.DeskAPI`, so every screen works the same against a desk in this process or one served to many tabs.
"""
