from local_tools.transports.cli import main

raise SystemExit(main())
