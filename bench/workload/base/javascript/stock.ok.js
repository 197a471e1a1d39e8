const lines = require('fs').readFileSync(0, 'utf8').trim().split('\n');
const [n, m, r] = lines[0].split(' ').map(Number);
const buy = lines[1].trim().split(' ').map(Number);
const sell = lines[2].trim().split(' ').map(Number);

const cheapest = Math.min(...buy);
const dearest = Math.max(...sell);
// trade only if selling is more expensive than buying
const after = Math.floor(r / cheapest) * dearest + (r % cheapest);
console.log(Math.max(r, after));
