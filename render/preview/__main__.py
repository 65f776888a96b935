import sys

from render.preview import main

sys.exit(main())
